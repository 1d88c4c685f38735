"""``memory://`` profile store: documents in a process-wide dict, for tests and demos.

``memory://name`` stores with the same name share their documents within one process
(so a test can read what a runtime saved); a bare ``memory://`` is private to its store.
Nothing survives the process. It keeps a journal of calls like PostgreSQL's
(``greenroom_priors.journal``), off unless ``journal = true``, so the journal's logic can
be tested without a server.
"""

from __future__ import annotations

import copy
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from greenroom_priors.ewma import DocumentError
from greenroom_priors.journal import (
    FinishChange,
    JournalEntry,
    StaleRun,
    SweepChange,
    SweepReport,
    ToolTally,
    forget_after,
)

_SHARED: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
_JOURNALS: dict[str, dict[tuple[str, str, str], _Row]] = {}


@attrs.define
class _Row:
    calls: int
    steps: int
    run_steps: int
    updated: float
    folded: int = 0


_SHARED_LOCK = threading.Lock()


class MemoryStore:
    """A ``ProfileStore`` held in memory; every operation takes one lock."""

    journal_by_default = False  # one process: nothing to share with a fleet

    def __init__(self, name: str = "") -> None:
        self.url = f"memory://{name}"
        self._lock = threading.Lock()
        self._journal: dict[tuple[str, str, str], _Row] = {}
        self.clock: Callable[[], float] = time.monotonic
        if name:
            with _SHARED_LOCK:
                self._docs = _SHARED.setdefault(name, {})
                self._journal = _JOURNALS.setdefault(name, {})
                # one lock per shared name, so stores of one name exclude each other
                self._lock = _NAME_LOCKS.setdefault(name, threading.Lock())
        else:
            self._docs = {}

    @classmethod
    def from_url(cls, url: str) -> MemoryStore:
        return cls(url.partition("://")[2].strip("/"))

    @staticmethod
    def forget(name: str) -> None:
        """Drop every document of a shared name (test isolation)."""
        with _SHARED_LOCK:
            _SHARED.pop(name, None)
            _JOURNALS.pop(name, None)

    def read(self, agent_id: str, key: str) -> Mapping[str, Any] | None:
        with self._lock:
            doc = self._docs.get((agent_id, key))
            return copy.deepcopy(doc) if doc is not None else None

    def update(
        self, agent_id: str, key: str, change: Callable[[Mapping[str, Any] | None], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        with self._lock:
            current = self._docs.get((agent_id, key))
            new = dict(change(copy.deepcopy(current) if current is not None else None))
            self._docs[(agent_id, key)] = copy.deepcopy(new)
            return new

    def delete(self, agent_id: str, key: str) -> bool:
        with self._lock:
            return self._docs.pop((agent_id, key), None) is not None

    def agents(self, key: str) -> list[str]:
        with self._lock:
            return sorted(a for a, k in self._docs if k == key)

    # ------------------------------------------------------------------ JournalStore
    def journal(self, entries: Sequence[JournalEntry]) -> None:
        now = self.clock()
        with self._lock:
            for e in entries:
                for name, tally in e.tallies.items():
                    row = self._journal.get((e.agent_id, e.run_id, name))
                    if row is None:
                        self._journal[(e.agent_id, e.run_id, name)] = _Row(tally.calls, tally.steps, e.steps, now)
                    else:
                        row.calls, row.steps = max(row.calls, tally.calls), max(row.steps, tally.steps)
                        row.run_steps, row.updated = max(row.run_steps, e.steps), now

    def finish_run(self, agent_id: str, key: str, run_id: str, change: FinishChange) -> Mapping[str, Any] | None:
        with self._lock:
            mine = [k for k in self._journal if k[0] == agent_id and k[1] == run_id]
            unfolded = {k[2]: r.calls - r.folded for k in mine if (r := self._journal[k]).calls > r.folded}
            current = self._docs.get((agent_id, key))
            new = change(copy.deepcopy(current) if current is not None else None, unfolded)
            if new is not None:
                self._docs[(agent_id, key)] = copy.deepcopy(dict(new))
            for k in mine:  # marked, not deleted: a repeat finds nothing to fold (the sweep forgets them)
                row = self._journal[k]
                row.folded, row.updated = row.calls, self.clock()
            return new

    def sweep(self, key: str, stale_after: float, change: SweepChange) -> SweepReport:
        with self._lock:
            now = self.clock()
            last: dict[tuple[str, str], float] = {}
            for (agent_id, run_id, _), row in self._journal.items():
                last[(agent_id, run_id)] = max(last.get((agent_id, run_id), 0.0), row.updated)
            runs: dict[str, list[StaleRun]] = {}
            for (agent_id, run_id), when in sorted(last.items()):
                rows = {k[2]: r for k, r in self._journal.items() if k[:2] == (agent_id, run_id)}
                tools = {n: ToolTally(r.calls - r.folded, r.steps) for n, r in rows.items() if r.calls > r.folded}
                if when < now - stale_after and tools:
                    steps = max(r.run_steps for r in rows.values())
                    runs.setdefault(agent_id, []).append(StaleRun(agent_id, run_id, steps, tools))
            refused = 0
            for agent_id, stale in list(runs.items()):
                current = self._docs.get((agent_id, key))
                try:
                    new = change(copy.deepcopy(current) if current is not None else None, stale)
                except DocumentError:
                    refused += 1
                    del runs[agent_id]
                    continue
                self._docs[(agent_id, key)] = copy.deepcopy(dict(new))
                for run in stale:
                    for name in run.tools:
                        row = self._journal[(agent_id, run.run_id, name)]
                        row.folded = row.calls
            open_runs = {k[:2] for k, r in self._journal.items() if r.calls > r.folded}
            cutoff = now - forget_after(stale_after)
            forgotten = [k for k in self._journal if k[:2] not in open_runs and last[k[:2]] < cutoff]
            for k in forgotten:
                del self._journal[k]
            folded = [r for s in runs.values() for r in s]
            calls = sum(t.calls for r in folded for t in r.tools.values())
            return SweepReport(len(folded), len(runs), calls, len(forgotten), refused)

    def journal_counts(self, agent_id: str, key: str) -> tuple[Mapping[str, Any] | None, dict[str, int]]:
        with self._lock:
            doc = copy.deepcopy(self._docs.get((agent_id, key)))
            unfolded: dict[str, int] = {}
            for (agent, _, name), row in self._journal.items():
                if agent == agent_id and row.calls > row.folded:
                    unfolded[name] = unfolded.get(name, 0) + row.calls - row.folded
            return doc, unfolded

    def ping(self) -> None:
        pass

    def close(self) -> None:
        pass


_NAME_LOCKS: dict[str, threading.Lock] = {}
