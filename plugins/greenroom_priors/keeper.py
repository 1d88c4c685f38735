"""The store as the plugin uses it: one ``Keeper`` per store URL of a runtime.

It holds what the process knows of the store (failed lately and why, answered lately),
the lock its I/O takes (one worker thread uses the store at a time: run starts, run
ends, checkpoints, sweeps, probes), and the checkpoints of the runs that journal into it:

- A successful call is tallied in its run's ledger on the event loop (``tally``), and its
  result goes back: the store is not touched on a call's path.
- A writer thread, started when there is something to write and gone when there is not,
  writes every run with new calls in one journal write, every ``checkpoint_every``
  seconds, or sooner once ``checkpoint_calls`` calls wait. A process that dies loses at
  most the calls of the last interval.
- A store that failed is left alone for ``RETRY_AFTER`` seconds by run starts, run ends
  and checkpoints, so a down database costs one wait, not one a run. Meanwhile what they
  would write goes to the spool (``greenroom_priors.spool``), which the first checkpoint
  or run start after that saves. A checkpoint's spooling is said once an outage: in the
  log at once, and as a ``PluginWarning`` by the next hook of a run (``take_news``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from time import monotonic
from typing import Any, TypeVar, cast

from greenroom_priors.config import PriorsConfig
from greenroom_priors.ewma import DocumentError
from greenroom_priors.journal import JournalStore
from greenroom_priors.ledger import RunLedger
from greenroom_priors.spool import Spool, SpooledRun
from greenroom_priors.store import ProfileStore, StoreError
from greenroom_priors.stores.urls import describe

log = logging.getLogger("greenroom.priors")
T = TypeVar("T")

RETRY_AFTER = 30.0
"""Seconds a store that failed is left alone (by run starts, run ends and checkpoints)."""


class Spooled(StoreError):
    """The store could not take a run: its calls are in the spool (the message says where)."""


def not_retried(reason: str) -> str:
    return f"{reason} (failed less than {RETRY_AFTER:g} s ago; not retried yet)"


class Keeper:
    """One store of a runtime, opened at first use (see the module docstring)."""

    def __init__(self, url: str, opener: Callable[[], ProfileStore], config: PriorsConfig) -> None:
        self.url = url
        self.store: ProfileStore | None = None
        self.spool = Spool(url)
        self._opener = opener
        self._every, self._batch = config.checkpoint_every, config.checkpoint_calls
        self._io = threading.RLock()  # held for every use of the store, and for writing its spool
        self._lock = threading.Lock()  # held briefly, for the fields below
        self._dirty: set[RunLedger] = set()
        self._pending = 0
        self._wake = threading.Event()
        self._thread: threading.Thread | None = None
        self._closed = False
        self._down_until, self._reason = 0.0, ""
        self._answered: float | None = None
        self._reported = False  # this outage's spooling was said
        self._news: str | None = None
        self._swept: float | None = None
        self._waiting: bool | None = None  # runs in the spool to save (None: not looked yet)

    # ------------------------------------------------------------------ what is known of it
    def down(self) -> str | None:
        """Why the store failed, when that was less than ``RETRY_AFTER`` seconds ago."""
        with self._lock:
            return self._reason if monotonic() < self._down_until else None

    def answered_within(self, seconds: float) -> bool:
        with self._lock:
            return self._answered is not None and monotonic() - self._answered <= seconds

    def take_news(self) -> str | None:
        """What a checkpoint spooled, said once an outage (then None until the next one)."""
        if self._news is None:
            return None
        with self._lock:
            news, self._news = self._news, None
        return news

    def use(self, op: Callable[[ProfileStore], T]) -> T:
        """``op(store)`` in this worker thread, the one using the store now, after saving
        what waits in the spool; its outcome is what the keeper knows of the store."""
        with self._io:
            try:
                if self.store is None:
                    self.store = self._opener()
                if self._waiting is not False:
                    runs, calls, done = self.spool.replay(self.store)
                    if runs:
                        log.info("priors-persistence: saved %d spooled run(s), %d call(s), into %s", runs, calls, self)
                    self._waiting = not done
                out = op(self.store)
            except DocumentError:
                self._answered_now()  # it answered: the document is what is wrong
                raise
            except Exception as exc:
                with self._lock:
                    self._down_until, self._reason = monotonic() + RETRY_AFTER, str(exc) or type(exc).__name__
                    self._answered = None
                raise
            self._answered_now()
            return out

    def __str__(self) -> str:
        return describe(self)

    def _answered_now(self) -> None:
        with self._lock:
            self._down_until, self._answered, self._reported = 0.0, monotonic(), False

    def checkpoint(self, force: bool = False) -> None:
        """Write every run with new calls into the journal and save what waits in the
        spool; when the store failed lately (unless ``force``) or fails now, spool the
        runs instead."""
        with self._io:
            with self._lock:
                ledgers = [ledger for ledger in self._dirty if not ledger.closed]
                runs = [ledger.spooled_run() for ledger in ledgers]
                self._dirty.clear()
                self._pending = 0
            if not runs and self._waiting is False:
                return
            reason = None if force else self.down()
            if reason is None:
                try:
                    if runs:
                        self.use(lambda store: cast(JournalStore, store).journal([run.entry() for run in runs]))
                    else:  # what waits in the spool (which every use saves first)
                        self.use(lambda store: None)
                except Exception as exc:
                    reason = str(exc) or type(exc).__name__
                else:
                    for ledger, run in zip(ledgers, runs, strict=True):
                        ledger.stored = {name: t.calls for name, t in run.tools.items()}
                        if ledger.spooled:  # the journal holds more than its file now
                            self.spool.remove(ledger.run)
                            ledger.spooled = False
                    return
            message = self._spool(runs, reason, ledgers)
        with self._lock:  # said once an outage
            say, self._reported = bool(message) and not self._reported, self._reported or bool(message)
            self._news = message if say else self._news
        if say:
            log.warning("priors-persistence: %s", message)

    def save(self, run: SpooledRun, spooled: bool) -> Mapping[str, Any] | None:
        """RunEnd: an ended run into the store; what was written (None: nothing). When
        the store failed lately or fails now, the run goes to the spool (``Spooled``)."""
        with self._io:
            reason = self.down()
            if reason is None:
                try:
                    saved = self.use(run.save)
                except DocumentError:
                    raise
                except Exception as exc:
                    reason = str(exc) or type(exc).__name__
                else:
                    if spooled:
                        self.spool.remove(run.run)
                    return saved
            else:
                reason = not_retried(reason)
            if self.store is None:  # never opened: a configuration to fix, not an outage to wait out
                raise StoreError(reason)
            message = self._spool([run], reason)
        self._start(now=False)
        raise Spooled(message)

    def _spool(self, runs: list[SpooledRun], reason: str, ledgers: Sequence[RunLedger] = ()) -> str:
        """``runs`` into the spool (``_io`` held); what to say of it."""
        if not runs:
            return ""
        agents: dict[str, int] = {}
        for run in runs:
            agents[run.agent] = agents.get(run.agent, 0) + run.calls
        who = ", ".join(f"{n} call(s) of agent {agent!r}" for agent, n in agents.items())
        try:
            self.spool.write(runs)
        except OSError as exc:
            return f"{describe(self)} is down ({reason}) and the spool cannot take {who} ({exc}): they are lost"
        for ledger in ledgers:
            ledger.spooled = True
        with self._lock:
            self._waiting = True
        return f"{describe(self)} is down: {who} spooled in {self.spool.folder}, saved when it is back ({reason})"

    # ------------------------------------------------------------------ the event loop
    def tally(self, ledger: RunLedger, tool: str, step: int, run_steps: int) -> None:
        """A successful call of ``ledger``'s run: counted, to be checkpointed."""
        with self._lock:
            ledger.tally(tool, step, run_steps)
            self._dirty.add(ledger)
            self._pending += 1
            due = self._pending >= self._batch
        self._start(now=due)

    def release(self, ledger: RunLedger) -> None:
        """RunEnd: the ledger is no longer checkpointed (its end saves it whole)."""
        with self._lock:
            ledger.closed = True
            self._dirty.discard(ledger)

    def sweep_due(self, every: float) -> bool:
        """Whether ``every`` seconds passed since this keeper last swept (if so, the caller sweeps)."""
        now = monotonic()
        with self._lock:
            if self._swept is not None and now - self._swept < every:
                return False
            self._swept = now
            return True

    # ------------------------------------------------------------------ the writer thread
    def _start(self, now: bool) -> None:
        thread = None
        with self._lock:
            if self._thread is None and not self._closed:
                thread = self._thread = threading.Thread(target=self._run, name="greenroom-priors", daemon=True)
        if now:
            self._wake.set()
        if thread is not None:
            thread.start()

    def _run(self) -> None:
        while True:
            self._wake.wait(self._every)
            self._wake.clear()
            try:
                self.checkpoint()
            except Exception:  # a bug, not the store (its failures are handled there): go on
                log.exception("priors-persistence: a checkpoint of %s failed", describe(self))
            with self._lock:
                if self._closed or not (self._dirty or self._waiting):
                    self._thread = None
                    return

    def close(self) -> None:
        """The runtime closes: the last checkpoint (into the store, or the spool), then the store."""
        with self._lock:
            self._closed, thread = True, self._thread
        self._wake.set()
        if thread is not None:
            thread.join()
        self.checkpoint()
        with self._io:
            if self.store is not None:
                self.store.close()
                self.store = None


__all__ = ["RETRY_AFTER", "Keeper", "Spooled", "not_retried"]
