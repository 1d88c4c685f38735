"""The spool: runs the store could not take, kept in files until it can.

When the store is down, what a checkpoint or a RunEnd would have written goes into one
small JSON file per run in ``<state dir>/priors-spool/<digest of the store>/``, written
atomically (a crash leaves the old file or the new one). The store's folder is named by
a digest of its URL as messages show it (no password), so every process of the machine
that uses the store finds it, and ``greenroom priors show`` and ``sweep`` too.

A file says what to save: an open run's absolute tallies (written into the journal as a
checkpoint would), or an ended run's fold. Saving it again after a crash between the
store's commit and the file's removal counts nothing twice in a store with a journal
(rows only grow, and a folded run's rows stay marked folded); a store without one folds
such a run again. Replays of one folder run one at a time on the machine (a file lock).

Bounded: at most ``MAX_RUNS`` files per store (a run beyond is not spooled, and the
warning says its calls are lost), each under ``MAX_BYTES`` (an ended run's list of
available tools, which only decays unused tools, is left out when it would pass it).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import attrs
from cattrs.preconf.json import make_converter
from filelock import FileLock, Timeout

from greenroom.kit import state_dir, write_json_atomic
from greenroom_priors.ewma import DocumentError, Observation, fold_document
from greenroom_priors.journal import JournalEntry, ToolTally, finish_change, has_journal
from greenroom_priors.keys import KEY
from greenroom_priors.store import ProfileStore
from greenroom_priors.stores.urls import describe, redact

log = logging.getLogger("greenroom.priors")

FORMAT = "greenroom.priors-spool/1"
FOLDER = "priors-spool"
MAX_RUNS = 10_000
"""Spooled runs kept per store at most."""
MAX_BYTES = 1 << 20
"""Bytes one spooled run takes at most."""


@attrs.frozen
class SpooledRun:
    """What one run left to save. ``journal``: its calls are successful-call tallies for
    the store's journal (and, once ``ended``, its fold), of which the journal held
    ``stored`` when it was spooled; otherwise an ended run whose observation is folded into
    the document directly (``tools``' steps unused)."""

    agent: str
    run: str
    steps: int
    tools: Mapping[str, ToolTally]
    journal: bool
    stored: Mapping[str, int] = attrs.field(factory=dict)
    ended: bool = False
    presence: Mapping[str, float] = attrs.field(factory=dict)
    available: frozenset[str] | None = None
    now: str = ""
    floor: float = 0.1
    failed: tuple[tuple[str, tuple[str, ...]], ...] = ()
    """The run's failed searches (an ended run's): (query, the tools it named)."""

    def waiting(self) -> dict[str, int]:
        """Per tool, the calls the store does not hold yet."""
        out = {name: t.calls - self.stored.get(name, 0) for name, t in self.tools.items()}
        return {name: n for name, n in out.items() if n > 0}

    @property
    def calls(self) -> int:
        return sum(self.waiting().values())

    def entry(self) -> JournalEntry:
        return JournalEntry(self.agent, self.run, self.steps, self.tools)

    def save(self, store: ProfileStore) -> Mapping[str, Any] | None:
        """Into ``store`` (a worker thread): what was written, or None when nothing was."""
        where = f"{describe(store)}, agent {self.agent!r}"
        counts = {name: t.calls for name, t in self.tools.items()}
        seen = Observation(
            presence=self.presence, counts=counts, available=self.available, steps=self.steps, failed=self.failed
        )
        now, floor = self.now, self.floor
        if not self.journal:
            return store.update(
                self.agent, KEY, lambda current: fold_document(current, seen, now=now, floor=floor, where=where)
            )
        assert has_journal(store)
        store.journal([self.entry()])
        if not self.ended:
            return None
        return store.finish_run(self.agent, KEY, self.run, finish_change(seen, now=now, floor=floor, where=where))


_JSON = make_converter()


class Spool:
    """The spool folder of one store."""

    def __init__(self, store_url: str, root: Path | None = None) -> None:
        self.url = store_url
        digest = hashlib.sha256(redact(store_url).encode("utf-8")).hexdigest()[:16]
        self.folder = (root if root is not None else state_dir() / FOLDER) / digest

    def path(self, run: str) -> Path:
        return self.folder / f"{hashlib.sha256(run.encode('utf-8')).hexdigest()[:32]}.json"

    def files(self) -> list[Path]:
        try:
            found = [p for p in self.folder.iterdir() if p.suffix == ".json" and not p.name.startswith(".")]
        except OSError:  # no folder yet: nothing waits
            return []
        return sorted(found, key=lambda p: p.name)

    def write(self, runs: list[SpooledRun]) -> None:
        """Each run into its file (replacing what it had spooled before). Raises
        ``OSError`` when the folder cannot take them, or holds ``MAX_RUNS`` already."""
        if not runs:
            return
        present = {p.name for p in self.files()}
        new = sum(self.path(r.run).name not in present for r in runs)
        if len(present) + new > MAX_RUNS:
            raise OSError(f"the spool {self.folder} holds {len(present)} runs, the most it keeps ({MAX_RUNS})")
        for run in runs:
            data = {"format": FORMAT, "store": redact(self.url), **_JSON.unstructure(run)}
            if len(json.dumps(data)) > MAX_BYTES:
                data["available"] = None  # only decays unused tools: the calls are what must not be lost
            write_json_atomic(self.path(run.run), data)

    def remove(self, run: str) -> None:
        self.path(run).unlink(missing_ok=True)

    def read(self) -> Iterator[tuple[Path, SpooledRun]]:
        """Every spooled run; a file that is not one is renamed ``*.bad`` (kept for a
        human, never read again) and said in the log."""
        for path in self.files():
            try:
                data = json.loads(path.read_text(encoding="utf-8"))
                if not isinstance(data, dict) or data.pop("format", None) != FORMAT:
                    raise ValueError(f"not a {FORMAT} file")
                data.pop("store", None)
                run = _JSON.structure(data, SpooledRun)
            except FileNotFoundError:  # saved by another process meanwhile
                continue
            except Exception as exc:  # not JSON, not a spooled run (cattrs says what is wrong)
                log.warning("priors-persistence: %s is not a spooled run (%s); renamed *.bad", path, exc)
                try:
                    os.replace(path, path.with_suffix(".bad"))
                except OSError:
                    pass
                continue
            yield path, run

    def calls_of(self, agent: str) -> int:
        """The agent's spooled calls the store does not hold yet (``greenroom priors show``)."""
        return sum(run.calls for _, run in self.read() if run.agent == agent)

    def replay(self, store: ProfileStore) -> tuple[int, int, bool]:
        """Save every spooled run into ``store`` and remove its file, one process of the
        machine at a time. Returns the runs and calls saved, and whether the replay was
        done (not: another process is replaying). A store error stops the replay (raised);
        a run whose document is broken stays spooled (``greenroom priors reset AGENT``)."""
        if not self.files():
            return 0, 0, True
        runs = calls = 0
        try:
            with FileLock(self.folder / ".replay.lock", timeout=0, mode=0o600):
                for path, run in self.read():
                    try:
                        run.save(store)
                    except DocumentError as exc:
                        log.warning("priors-persistence: spooled run %s stays in the spool: %s", path.name, exc)
                        continue
                    path.unlink(missing_ok=True)
                    runs, calls = runs + 1, calls + run.calls
        except Timeout:
            return runs, calls, False
        return runs, calls, True


__all__ = ["FOLDER", "FORMAT", "MAX_BYTES", "MAX_RUNS", "Spool", "SpooledRun"]
