"""Group commit for the journal of calls: the tallies of calls that arrive while a write is
under way go to the store together, in the next write.

A journal write is one durable commit (a few milliseconds where disks flush slowly), and
a runtime has one connection per store: without this, a gateway's concurrent calls
would wait for each other's commits one by one. With it, each call still waits for a
commit that holds its tally, but all the calls that queued behind one commit share the
next. Callers are worker threads (never the event loop); each waits on a condition.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

import attrs

from greenroom_priors.journal import JournalEntry, JournalStore, ToolTally

MAX_BATCH = 500
"""Entries written in one statement at most; more wait for the next write."""


@attrs.define
class _Waiting:
    entry: JournalEntry
    done: bool = False
    error: BaseException | None = None


def merged(entries: Sequence[JournalEntry]) -> list[JournalEntry]:
    """One entry per run (a row may be written once in a statement), each tally the
    largest seen: the journal keeps the largest anyway."""
    runs: dict[tuple[str, str], tuple[int, dict[str, ToolTally]]] = {}
    for e in entries:
        steps, tallies = runs.get((e.agent_id, e.run_id), (0, {}))
        for name, t in e.tallies.items():
            was = tallies.get(name)
            tallies[name] = t if was is None else ToolTally(max(was.calls, t.calls), max(was.steps, t.steps))
        runs[(e.agent_id, e.run_id)] = (max(steps, e.steps), tallies)
    return [JournalEntry(a, r, steps, tallies) for (a, r), (steps, tallies) in runs.items()]


class Batcher:
    """Writes the journal entries of one store, a batch per commit."""

    def __init__(self, store: JournalStore) -> None:
        self.store = store
        self._cond = threading.Condition()
        self._queue: list[_Waiting] = []
        self._writing = False
        self.commits = 0  # how many writes there were (observability, tests)

    def write(self, agent_id: str, run_id: str, steps: int, tallies: Mapping[str, ToolTally]) -> None:
        """Return once a commit that holds ``tallies`` succeeded; raise what it raised."""
        me = _Waiting(JournalEntry(agent_id, run_id, steps, dict(tallies)))
        with self._cond:
            self._queue.append(me)
            while not me.done:
                if self._writing:
                    self._cond.wait()
                    continue
                # nobody is writing: this thread writes what has queued, its own entry included
                batch, self._queue = self._queue[:MAX_BATCH], self._queue[MAX_BATCH:]
                self._writing = True
                self._cond.release()
                error: BaseException | None = None
                try:
                    self.store.journal(merged([w.entry for w in batch]))
                except BaseException as exc:  # every waiter of the batch learns it failed
                    error = exc
                finally:
                    self._cond.acquire()
                    self._writing = False
                    self.commits += 1
                    for w in batch:
                        w.done, w.error = True, error
                    self._cond.notify_all()
        if me.error is not None:
            raise me.error


__all__ = ["MAX_BATCH", "Batcher", "merged"]
