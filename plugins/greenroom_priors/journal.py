"""The journal of calls: what a store that keeps one promises, and the pure folds of it.

A fleet of gateways folds usage into the priors only when a run ends, and a run may
last for hours; a process that is killed takes its open runs with it. So a store that
keeps a journal (PostgreSQL) is told each run's successful calls as they happen, as
*absolute* tallies per ``(agent, run, tool)``: "this run has called ``web_search`` 7
times, in 5 of its steps". A row only grows (``GREATEST``), so writing a tally again,
after a commit whose outcome was unknown or out of order with another write of the same
run, changes nothing: a call is never counted twice by the journal.

Each row also says how much of it is already in the priors document (``folded``). A
call is in exactly one place: in a row's ``calls - folded`` or in the document's
``calls``. When the run ends, its rows' unfolded calls are folded into the document
and the rows marked folded, in one transaction (kept, so a run saved again from the spool
after a crash counts nothing twice). Rows of runs that were not written for longer
than a bound (their process died) are folded by a sweep, which sets ``folded = calls``
(keeping the rows, so a run that was only idle and writes again is counted from where
the sweep stopped); fully folded rows are forgotten after a much longer bound
(``forget_after``).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, TypeGuard, runtime_checkable

import attrs

from greenroom import Event
from greenroom_priors.ewma import Observation, check_document, empty_document, fold_document
from greenroom_priors.store import ProfileStore

FORGET_AFTER_STALES = 24
FORGET_AFTER_MIN = 86400.0


def forget_after(stale_after: float) -> float:
    """Seconds a swept run must stay silent before its fully folded rows are deleted: 24
    times the sweep's bound, and at least a day. Until then a run that was only idle and
    writes again is counted from where the sweep stopped; after it, it would be counted
    again from the start, so this is kept far beyond any run's life."""
    return max(FORGET_AFTER_STALES * stale_after, FORGET_AFTER_MIN)


@attrs.frozen
class ToolTally:
    """A run's successful calls of one tool so far: how many, and in how many steps."""

    calls: int
    steps: int


@attrs.frozen
class JournalEntry:
    """What one write says of one run: its steps so far and its tallies (absolute)."""

    agent_id: str
    run_id: str
    steps: int
    tallies: Mapping[str, ToolTally]


@attrs.frozen
class StaleRun:
    """A run the sweep folds: its unfolded calls per tool, and its steps (for presence)."""

    agent_id: str
    run_id: str
    steps: int
    tools: Mapping[str, ToolTally]

    def observation(self) -> Observation:
        """The run as if it had ended: presence = share of its steps with a call of the
        tool (1.0 when the steps are unknown), counts = the unfolded calls, no decay of
        tools it did not call (what it could have called is not known)."""
        steps = max(self.steps, 1)
        presence = {name: min(1.0, max(t.steps, 1) / steps) for name, t in self.tools.items() if t.calls > 0}
        counts = {name: t.calls for name, t in self.tools.items() if t.calls > 0}
        return Observation(presence=presence, counts=counts, available=None, steps=self.steps)


@attrs.frozen
class SweepReport:
    """What a sweep did: runs folded (over how many agents, how many calls), rows
    forgotten, and agents whose document could not take them (left for the next sweep)."""

    runs: int = 0
    agents: int = 0
    calls: int = 0
    forgotten: int = 0
    refused: int = 0

    def __add__(self, other: SweepReport) -> SweepReport:
        mine, theirs = attrs.astuple(self), attrs.astuple(other)
        return SweepReport(*(a + b for a, b in zip(mine, theirs, strict=True)))


@attrs.frozen
class PriorsSwept(Event):
    """A sweep folded the journal of runs whose process died."""

    kind: str = attrs.field(init=False, default="priors_sweep")
    runs: int = 0
    agents: int = 0
    calls: int = 0
    store: str = ""

    def describe(self) -> str:
        done = f"{self.runs} stale run(s) of {self.agents} agent(s), {self.calls} call(s)"
        return f"priors: folded {done} in {self.store}"


Doc = Mapping[str, Any]
FinishChange = Callable[[Doc | None, Mapping[str, int]], Doc | None]
"""``change(document, unfolded calls per tool)``: the new document, or None to write nothing."""
SweepChange = Callable[[Doc | None, Sequence[StaleRun]], Doc]
"""``change(document, the agent's stale runs)``: the document with every run folded in."""


@runtime_checkable
class JournalStore(ProfileStore, Protocol):
    """A ``ProfileStore`` that also keeps a journal of calls (see the module docstring)."""

    journal_by_default: bool
    """Whether ``journal = "auto"`` turns the journal on (a store shared between machines)."""

    def journal(self, entries: Sequence[JournalEntry]) -> None:
        """Record runs' absolute tallies (and their steps so far) in one commit, at most
        one entry per run; a row never shrinks, so this may be repeated safely."""

    def finish_run(self, agent_id: str, key: str, run_id: str, change: FinishChange) -> Doc | None:
        """In one transaction: the run's unfolded calls, ``change`` applied to the
        document with them, the run's rows marked folded. Returns what was written (None:
        nothing). A repeat finds nothing unfolded: the run is not counted twice."""

    def sweep(self, key: str, stale_after: float, change: SweepChange) -> SweepReport:
        """Fold every run not written for ``stale_after`` seconds (one transaction per
        agent, marking what it folded), and forget fully folded rows of runs silent for
        ``forget_after(stale_after)`` seconds. An agent whose document ``change`` refuses
        (``DocumentError``) is left as it was and counted as ``refused``."""

    def journal_counts(self, agent_id: str, key: str) -> tuple[Doc | None, dict[str, int]]:
        """The document and the journal's unfolded calls per tool, read at one instant."""

    def ping(self) -> None:
        """A cheap round trip (``SELECT 1``); raises ``StoreError`` when the store is not there."""


def has_journal(store: object) -> TypeGuard[JournalStore]:
    return isinstance(store, JournalStore)


def fold_runs(current: Doc | None, runs: Sequence[StaleRun], *, now: str, floor: float, where: str) -> dict[str, Any]:
    """The document with each stale run folded in as one session (by run id)."""
    out = check_document(current, where) if current is not None else empty_document()
    for run in sorted(runs, key=lambda r: r.run_id):
        out = fold_document(out, run.observation(), now=now, floor=floor, where=where)
    return out


def finish_change(observation: Observation, *, now: str, floor: float, where: str) -> FinishChange:
    """The RunEnd fold: the run's presence and decay as without a journal, and as counts
    the calls its journal rows still hold (none: a sweep, or an earlier save, folded them)."""

    def change(current: Doc | None, unfolded: Mapping[str, int]) -> Doc | None:
        if not unfolded:
            return None
        presence = {**{name: 1.0 for name in unfolded}, **observation.presence}
        seen = attrs.evolve(observation, presence=presence, counts=dict(unfolded))
        return fold_document(current, seen, now=now, floor=floor, where=where)

    return change


def exact_calls(store: JournalStore, agent_id: str, key: str) -> dict[str, int]:
    """Per tool called at least once, every call ever counted for the agent: the
    document's ``calls`` plus the journal's unfolded calls, read at one instant."""
    doc, unfolded = store.journal_counts(agent_id, key)
    totals: dict[str, int] = {}
    if doc is not None:
        for name, entry in check_document(doc, f"agent {agent_id!r}")["tools"].items():
            totals[name] = int(entry["calls"])
    for name, n in unfolded.items():
        totals[name] = totals.get(name, 0) + n
    return {name: n for name, n in totals.items() if n}


__all__ = [
    "FORGET_AFTER_MIN",
    "FORGET_AFTER_STALES",
    "FinishChange",
    "JournalEntry",
    "JournalStore",
    "PriorsSwept",
    "StaleRun",
    "SweepChange",
    "SweepReport",
    "ToolTally",
    "exact_calls",
    "finish_change",
    "fold_runs",
    "forget_after",
    "has_journal",
]
