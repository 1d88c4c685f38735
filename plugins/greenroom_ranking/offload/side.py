"""Parts of a corpus built in a second process while this one builds the rest.

Python builds an index on one CPU, so the first search of a catalog of 100,000 tools built
its substring index and its BM25 table one after the other. With a CPU to spare, a child
process makes the token occurrences of the BM25 table's last ``TAIL_SHARE`` of tools
(``analysis.fields.tail_occurrences``) and then the whole text part (``corpus.CorpusText``,
from names and descriptions only), while this one builds the rest of the table; each
answer is checked before it is used (the text part as a stored index is).

The child is ``python -m greenroom_ranking.offload.child``, started with ``subprocess``,
not ``multiprocessing``: a ``multiprocessing`` child imports its parent's ``__main__``,
which for an application script without a main guard runs the application again. Its
jobs and answers are pickled files (see ``SideBuild``; the child is this process's own),
and only short notices cross its stdout. Whatever
goes wrong (the child cannot start, fails, answers late or with what does not fit), the
part is built in this process as it was before: the parts are the same either way.
"""

from __future__ import annotations

import logging
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import threading
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

log = logging.getLogger("greenroom_ranking")

TAIL_SHARE = 0.25
"""Of the BM25 table's tools, the last share whose occurrences the side build makes
(before the text part): what keeps the child about as busy as this process on two CPUs
(the text part takes about a third of the table's time)."""

SIDE_TIMEOUT = 120.0
"""Seconds an answer may take before its part is built in this process instead (a child's
work for 100,000 tools takes about a second)."""

CHILD = (sys.executable, "-m", "greenroom_ranking.offload.child")
"""The child's command line."""


def usable_cpus() -> int:
    """CPUs this process may run on (its affinity, where the platform tells)."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not Linux
        return os.cpu_count() or 1


SPARE = 0.5
"""CPUs the last minute's load must leave free (this process's own load included, about
one while it builds): half of one, so that a benchmark running one process after another
(a load of about one, and a little more) still counts a second CPU as spare."""


def spare_cpu() -> bool:
    """Whether a CPU is free for a child now: two or more usable, and the load of the last
    minute leaves ``SPARE``. On a busy machine a child would only take turns with this
    process, and the first search would take longer, not less (2x at a load of 3.3 on two
    CPUs, measured with ``benchmarks/side_build.py``)."""
    cpus = usable_cpus()
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):  # not available here: judged on the CPUs alone
        load = 0.0
    return cpus >= 2 and cpus - load >= SPARE


def worth_a_side_build(tools: int, min_tools: int) -> bool:
    """Whether a corpus of ``tools`` gets a side build: ``min_tools`` (0: never) reached,
    and a spare CPU to run it on."""
    return 0 < min_tools <= tools and spare_cpu()


@attrs.frozen
class Job:
    """One part for a child to build: its task (``child.TASKS``), the task's inputs, and
    the ``IndexStore`` folder and key to write its arrays to, if any."""

    task: str
    inputs: tuple[Any, ...]
    store: tuple[Path, str] | None = None

    def wire(self) -> tuple[str, tuple[Any, ...], tuple[str, str] | None]:
        """The job as the child reads it (``child.main``): plain values only."""
        return self.task, self.inputs, None if self.store is None else (str(self.store[0]), self.store[1])


class SideBuild:
    """Parts being built by one child process, in order; ``result`` waits for one.

    The jobs go to the child in a file it reads as its stdin (gone once both have closed
    it); each answer comes back in a file of its own in a folder made for the build, and
    the child says on its stdout, one line each, which ones are ready. Nothing crosses a
    pipe in bulk: a thread that must take the GIL back after every 64 KB a pipe holds,
    while this process builds, took a second to move 15 MB, and a child that waits for its
    parent to read an answer does nothing meanwhile. Answers are read only when asked
    for, so a side build adds nothing to this process's peak while it builds."""

    def __init__(self, jobs: Sequence[Job], command: Sequence[str] | None = None) -> None:
        self.jobs = tuple(jobs)
        self.stored = [False] * len(self.jobs)  # whether the child wrote each job's arrays to the store
        self._ready: set[int] = set()  # answers the child has written, not yet taken
        self._heard = -1  # the last answer the child said was ready
        self._failed: str | None = None
        self._folder = Path(tempfile.mkdtemp(prefix="greenroom-side-"))
        # removed once nothing more is read from it, or with this object, or at exit
        self._remove = weakref.finalize(self, shutil.rmtree, str(self._folder), True)
        env = dict(os.environ)
        # the child imports what this process imports, from where this process found it
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        message = [j.wire() for j in self.jobs]
        try:
            with tempfile.TemporaryFile() as inputs:
                pickle.dump(message, inputs, protocol=pickle.HIGHEST_PROTOCOL)
                inputs.seek(0)
                self._proc = subprocess.Popen(
                    [*(command or CHILD), str(self._folder)],
                    stdin=inputs,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    env=env,
                )
        except BaseException:
            self._remove()
            raise

    @classmethod
    def start(cls, jobs: Sequence[Job], command: Sequence[str] | None = None) -> SideBuild | None:
        """A side build under way, or None when no child could be started."""
        try:
            return cls(jobs, command)
        except Exception as exc:  # no executable, no room for the inputs, a process limit: built here instead
            log.debug("side build of %s not started: %s", ", ".join(j.task for j in jobs), exc)
            return None

    def _listen(self, job: int) -> None:
        """Read the child's notices until it says ``job`` is ready, or ends."""
        stdout = self._proc.stdout
        assert stdout is not None  # opened as a pipe
        try:
            while self._heard < job:
                line = stdout.readline()
                if not line:
                    raise EOFError("the child ended before it answered")
                self._heard = int(line)
                self._ready.add(self._heard)
        except Exception as exc:  # ended, stopped, or said what is no notice
            self._failed = self._failed or f"no answer: {exc!r}"
        if self._failed is not None or self._heard == len(self.jobs) - 1:
            self._finish()

    def _finish(self) -> None:
        """The child waited for and its pipe closed (it has answered, or failed)."""
        stdout = self._proc.stdout
        if stdout is not None:
            stdout.close()
        if self._proc.wait() != 0 and self._failed is None and self._heard < len(self.jobs) - 1:
            self._failed = f"the child exited with {self._proc.returncode}"

    def result(self, job: int, timeout: float | None = None) -> dict[str, np.ndarray] | None:
        """Job ``job``'s arrays, or None (the reason logged) when the child failed or took
        longer than ``timeout`` (``SIDE_TIMEOUT``); after a failure, the child is gone."""
        task = self.jobs[job].task
        try:
            if job not in self._ready and self._failed is None:
                listener = threading.Thread(target=self._listen, args=(job,), name="greenroom-side-build", daemon=True)
                listener.start()
                listener.join(SIDE_TIMEOUT if timeout is None else timeout)
                if listener.is_alive():
                    self.cancel()
                    listener.join()  # the pipe closes with the child: the read ends at once
                    log.debug("side build of %s took too long: built here instead", task)
                    return None
            if job not in self._ready:
                log.debug("side build of %s failed: %s", task, self._failed)
                return None
            self._ready.discard(job)
            answer = self._answer(job)
        finally:
            if self._failed is not None or (self._heard == len(self.jobs) - 1 and not self._ready):
                self._remove()  # nothing more will be read from it
        arrays, stored = answer if isinstance(answer, tuple) and len(answer) == 2 else (None, False)
        if not isinstance(arrays, dict) or not all(
            isinstance(k, str) and isinstance(v, np.ndarray) for k, v in arrays.items()
        ):
            log.debug("side build of %s answered something other than arrays", task)
            return None
        self.stored[job] = stored is True
        return arrays

    def _answer(self, job: int) -> Any:
        """The answer file's content (None if unreadable), the file removed."""
        path = self._folder / f"{job}.pickle"
        try:
            with path.open("rb") as fh:
                return pickle.load(fh)
        except Exception as exc:  # missing or damaged: built here instead
            log.debug("side build's answer %s could not be read: %r", path.name, exc)
            return None
        finally:
            path.unlink(missing_ok=True)

    def cancel(self) -> None:
        """Stop the child (a part taking too long)."""
        try:
            self._proc.kill()
        except OSError:  # gone already
            pass

    def discard(self) -> None:
        """Stop the child and let it go (parts no longer wanted): its pipe closed, the
        process waited for (at once, since it is stopped), its answers removed."""
        self.cancel()
        self._failed = self._failed or "discarded"
        self._finish()
        self._remove()


@attrs.define
class SideJob:
    """A part's job in a side build (what ``RankingCorpus.side`` holds, by part key):
    ``start`` is where a job that builds the tail of a part begins (0: the whole part);
    ``used``, whether the part took that tail in (``analysis.fields.Tail``)."""

    build: SideBuild
    index: int
    start: int = 0
    used: bool = False

    def result(self) -> dict[str, np.ndarray] | None:
        return self.build.result(self.index)

    @property
    def stored(self) -> bool:
        return self.build.stored[self.index]


__all__ = [
    "CHILD",
    "SIDE_TIMEOUT",
    "TAIL_SHARE",
    "Job",
    "SideBuild",
    "SideJob",
    "spare_cpu",
    "usable_cpus",
    "worth_a_side_build",
]
