"""The plugin's side of the journal of calls (``greenroom_priors.journal``).

One ``Ledger`` per run that journals: each successful call is tallied on the event loop
and written, before the call's result goes back, in a worker thread; at RunEnd the
ledger's last tallies are written and its rows folded into the priors. A store that fails
keeps the tallies in the ledger (one row per tool the run used: bounded by the tool set)
to be written with the next call or at RunEnd, and is left alone for ``RETRY_AFTER``
seconds (``greenroom_priors.health``), so a down database costs one wait, not one a
call; the failure is reported once until a write succeeds again. A run whose RunEnd
could not save is kept (at most ``MAX_UNSAVED``) and saved at a later run start or end,
or when the runtime closes. Every ``sweep_every`` seconds a run start or end also sweeps
the journal: runs of processes that died are folded.

Tallies change on the event loop only; a ledger's writes run one at a time
(``Ledger.lock``), each of a snapshot taken on the loop, and the writes of all runs into
one store share commits (``greenroom_priors.batching``). ``finish`` takes the lock too,
so a write still in flight when the run ends lands before the rows are folded, and a
write that comes later finds the ledger flushed and writes nothing.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Mapping
from time import monotonic
from typing import Any
from weakref import WeakKeyDictionary

import anyio
import anyio.to_thread
import attrs

from greenroom import RunContext, ToolCall, ToolResult
from greenroom_priors.batching import Batcher
from greenroom_priors.config import PriorsConfig
from greenroom_priors.ewma import Observation, fold_document, utc_now
from greenroom_priors.health import down_reason, mark_down, mark_up, not_retried
from greenroom_priors.journal import FinishChange, JournalStore, PriorsSwept, ToolTally, fold_runs, has_journal
from greenroom_priors.keys import KEY
from greenroom_priors.store import ProfileStore, StoreError
from greenroom_priors.stores import describe

log = logging.getLogger("greenroom.priors")

MAX_UNSAVED = 1000
"""Ended runs kept for a later save at most; past it the oldest is given up (what it had
written stays in the journal, for a sweep)."""
JOURNAL_THREADS = 16
"""Worker threads a runtime's journal writes use at most: calls beyond wait on the event
loop (and share the next commit), so a database that hangs ties up this many threads,
not one per call in flight."""
JOURNAL_WAIT = 10.0
"""Seconds a call waits for its journal write at most (half the tool timeout when that is
shorter): past it the call goes on and the store is taken as down."""

_OUTAGES: set[str] = set()  # stores whose journal failure was reported, until a write succeeds
_LAST_SWEEP: dict[str, float] = {}
_LOCK = threading.Lock()

Report = Callable[[RunContext, str, str, BaseException, str], None]
"""``report(ctx, hook, doing, exc, then)``: the plugin's way to warn (or fail, with ``raise``)."""


def _merged(old: Mapping[str, ToolTally], new: Mapping[str, ToolTally]) -> dict[str, ToolTally]:
    out = dict(old)
    for name, t in new.items():
        was = out.get(name)
        out[name] = t if was is None else ToolTally(max(was.calls, t.calls), max(was.steps, t.steps))
    return out


class Ledger:
    """One run's successful calls, and how much of them the journal is known to hold."""

    def __init__(self, batcher: Batcher, url: str, agent_id: str, run_id: str) -> None:
        self.store: JournalStore = batcher.store
        self.batcher = batcher
        self.url = url
        self.agent_id = agent_id
        # the run's own id is short (12 hex digits): the journal's must be unique in a fleet
        self.run_id = f"{run_id}-{uuid.uuid4().hex}"
        self.calls: dict[str, int] = {}
        self.steps: dict[str, int] = {}
        self._last_step: dict[str, int] = {}
        self.run_steps = 0
        self.written: Mapping[str, ToolTally] = {}  # replaced whole, never changed in place
        self.lock = threading.Lock()
        self.closed = False  # RunEnd took over: calls no longer tally or write
        self.flushed = False  # every tally of the closed ledger is in the journal

    def tally(self, tool: str, step: int, run_steps: int) -> None:
        self.calls[tool] = self.calls.get(tool, 0) + 1
        if self._last_step.get(tool) != step:
            self._last_step[tool] = step
            self.steps[tool] = self.steps.get(tool, 0) + 1
        self.run_steps = max(self.run_steps, run_steps)

    def unwritten(self) -> dict[str, ToolTally]:
        written = self.written
        tallies = {name: ToolTally(n, self.steps[name]) for name, n in self.calls.items()}
        return {name: t for name, t in tallies.items() if written.get(name) != t}

    def write(self, tallies: Mapping[str, ToolTally], steps: int) -> None:
        """Worker thread: the snapshot ``tallies`` into the journal."""
        with self.lock:
            if self.flushed:
                return
            self.batcher.write(self.agent_id, self.run_id, steps, tallies)
            self.written = _merged(self.written, tallies)

    def finish(self, change: FinishChange) -> Mapping[str, Any] | None:
        """Worker thread, once closed: the last tallies, then the fold of the run's rows.
        Safe to repeat after a failure: the tallies are written until that succeeds, and a
        fold that landed deleted the rows, so a repeat finds nothing to fold."""
        with self.lock:
            if not self.flushed:
                rest = self.unwritten()
                self.batcher.write(self.agent_id, self.run_id, self.run_steps, rest)
                self.written = _merged(self.written, rest)
                self.flushed = True
            return self.store.finish_run(self.agent_id, KEY, self.run_id, change)


def finish_change(observation: Observation, *, now: str, floor: float, where: str) -> FinishChange:
    """The RunEnd fold: the run's presence and decay as without a journal, and as counts
    the calls its journal rows still hold (none: the sweep, or an earlier try, folded them)."""

    def change(current: Mapping[str, Any] | None, unfolded: Mapping[str, int]) -> Mapping[str, Any] | None:
        if not unfolded:
            return None
        presence = {**{name: 1.0 for name in unfolded}, **observation.presence}
        seen = Observation(presence=presence, counts=dict(unfolded), available=observation.available)
        return fold_document(current, seen, now=now, floor=floor, where=where)

    return change


@attrs.frozen
class _Unsaved:
    ledger: Ledger
    change: FinishChange


class Journaling:
    """The journal for one plugin instance (one runtime): ledgers by run, unsaved runs."""

    def __init__(self, config: PriorsConfig, report: Report) -> None:
        self.config = config
        self._report = report
        self._ledgers: WeakKeyDictionary[RunContext, Ledger] = WeakKeyDictionary()
        self._unsaved: list[_Unsaved] = []
        self._closing = False
        self._saving = False
        self._batchers: dict[str, Batcher] = {}
        self._threads: anyio.CapacityLimiter | None = None  # made on the event loop, at first use

    def wanted(self, store: ProfileStore) -> bool:
        """Whether runs journal into ``store``; ``journal = true`` on a store without a
        journal is a ``StoreError``."""
        setting = self.config.journal
        if setting is False or not self.config.save:
            return False
        if not has_journal(store):
            if setting is True:
                raise StoreError(
                    f"{describe(store)} keeps no journal of calls: journal = true needs a store that "
                    'does (postgresql://...); set journal = "auto" or false'
                )
            return False
        return setting is True or bool(getattr(store, "journal_by_default", False))

    def begin(self, ctx: RunContext, store: ProfileStore, url: str) -> None:
        """RunStart: a ledger for the run when it journals."""
        try:
            if not self.wanted(store):
                return
        except StoreError as exc:
            self._report(ctx, "greenroom_run_start", "journaling tool calls", exc, "going on without")
            return
        assert has_journal(store)
        batcher = self._batchers.get(url)
        if batcher is None or batcher.store is not store:
            batcher = self._batchers[url] = Batcher(store)
        self._ledgers[ctx] = Ledger(batcher, url, ctx.agent.id, ctx.run_id)

    async def record(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        """AfterToolExecute: a successful call is in the journal before its result goes
        back, or kept in the ledger (and reported once) when the store cannot take it."""
        ledger = self._ledgers.get(ctx)
        if ledger is None or ledger.closed or result.is_error or call.name not in ctx.usage.called_in(ctx.step):
            return
        ledger.tally(call.name, ctx.step, max(ctx.usage.steps, ctx.step))
        reason = down_reason(ledger.url)
        if reason is not None:
            self._outage(ctx, ledger.url, not_retried(reason))
            return
        tallies = ledger.unwritten()
        if not tallies:  # written and confirmed already (with another call of this run)
            return
        wait = min(JOURNAL_WAIT, ctx.agent.tool_timeout / 2)
        if self._threads is None:
            self._threads = anyio.CapacityLimiter(JOURNAL_THREADS)
        try:
            with anyio.fail_after(wait):
                await anyio.to_thread.run_sync(
                    ledger.write, tallies, ledger.run_steps, abandon_on_cancel=True, limiter=self._threads
                )
        except Exception as exc:
            if isinstance(exc, TimeoutError):
                exc = StoreError(f"{describe(ledger.store)}: no answer within {wait:g} s")
            mark_down(ledger.url, exc)
            self._outage(ctx, ledger.url, exc)
            return
        mark_up(ledger.url)
        with _LOCK:
            _OUTAGES.discard(ledger.url)

    def _outage(self, ctx: RunContext, url: str, exc: BaseException) -> None:
        if self.config.on_store_error != "raise":
            with _LOCK:
                if url in _OUTAGES:
                    return
                _OUTAGES.add(url)
        then = "the call stands, and its count is kept in memory and written with a later one"
        self._report(ctx, "greenroom_after_tool_execute", "journaling a tool call", exc, then)

    def take(self, ctx: RunContext) -> Ledger | None:
        """RunEnd: the run's ledger (closed), or None when it journaled no call."""
        ledger = self._ledgers.pop(ctx, None)
        if ledger is None:
            return None
        ledger.closed = True
        return ledger if ledger.calls else None

    async def finish(self, ctx: RunContext, ledger: Ledger, change: FinishChange) -> Mapping[str, Any] | None:
        """RunEnd: fold the run's journal; what was written, or None. On failure the run
        is kept for a later save, and that is reported."""
        reason = down_reason(ledger.url)
        try:
            if reason is not None:
                raise not_retried(reason)
            saved = await anyio.to_thread.run_sync(ledger.finish, change)
        except Exception as exc:
            if reason is None:
                mark_down(ledger.url, exc)
            self._keep(ctx, ledger, change)
            then = f"the run's {sum(ledger.calls.values())} call(s) are kept and saved again later"
            self._report(ctx, "greenroom_run_end", "saving tool priors", exc, then)
            return None
        mark_up(ledger.url)
        return saved

    def _keep(self, ctx: RunContext, ledger: Ledger, change: FinishChange) -> None:
        if len(self._unsaved) >= MAX_UNSAVED:
            gone = self._unsaved.pop(0).ledger
            log.warning(
                "priors-persistence: more than %d ended runs wait for %s; gave up run %s of agent %r "
                "(what it journaled stays for a sweep)",
                MAX_UNSAVED,
                describe(gone.store),
                gone.run_id,
                gone.agent_id,
            )
        self._unsaved.append(_Unsaved(ledger, change))
        if not self._closing:
            self._closing = True
            ctx.on_close(self.save_unsaved)

    async def save_unsaved(self) -> None:
        """Save kept runs whose store is not known to be down (run start, end, close);
        one caller at a time (runs that end together do not save one run twice)."""
        if self._saving or not self._unsaved:
            return
        self._saving = True
        try:
            await self._save_unsaved()
        finally:
            self._saving = False

    async def _save_unsaved(self) -> None:
        for item in list(self._unsaved):
            url = item.ledger.url
            if down_reason(url) is not None:
                continue
            try:
                await anyio.to_thread.run_sync(item.ledger.finish, item.change)
            except Exception as exc:
                mark_down(url, exc)
                log.warning("priors-persistence: saving a kept run into %s failed again: %s", url, exc)
                continue
            mark_up(url)
            self._unsaved.remove(item)
            log.info("priors-persistence: saved kept run %s of agent %r", item.ledger.run_id, item.ledger.agent_id)

    async def sweep(self, ctx: RunContext, store: ProfileStore, url: str) -> None:
        """Fold the runs of dead processes, at most every ``sweep_every`` seconds per store."""
        try:
            if not self.wanted(store) or down_reason(url) is not None or not _due(url, self.config.sweep_every):
                return
        except StoreError:
            return  # said at run start
        assert has_journal(store)
        floor, now, where = self.config.min_smoothing, utc_now(), describe(store)

        def change(current: Mapping[str, Any] | None, runs: Any) -> Mapping[str, Any]:
            return fold_runs(current, runs, now=now, floor=floor, where=f"{where}, agent {runs[0].agent_id!r}")

        try:
            report = await anyio.to_thread.run_sync(store.sweep, KEY, self.config.journal_stale, change)
        except Exception as exc:
            mark_down(url, exc)
            log.warning("priors-persistence: sweeping the journal of %s failed: %s", where, exc)
            return
        mark_up(url)
        if report.refused:
            log.warning(
                "priors-persistence: sweeping %s: %d agent(s) have a broken priors document; their runs "
                "stay in the journal (greenroom priors reset AGENT)",
                where,
                report.refused,
            )
        if report.runs or report.forgotten:
            log.info("priors-persistence: swept %s: %s", where, report)
            ctx.emit(PriorsSwept(runs=report.runs, agents=report.agents, calls=report.calls, store=where))


def _due(url: str, every: float) -> bool:
    """Whether ``every`` seconds have passed since this process last swept ``url`` (and
    if so, this caller sweeps it: concurrent runs do not all sweep at once)."""
    now = monotonic()
    with _LOCK:
        last = _LAST_SWEEP.get(url)
        if last is not None and now - last < every:
            return False
        _LAST_SWEEP[url] = now
        return True


def forget_sweeps() -> None:
    """Forget when each store was last swept and which outages were reported (tests)."""
    with _LOCK:
        _LAST_SWEEP.clear()
        _OUTAGES.clear()


__all__ = ["JOURNAL_THREADS", "JOURNAL_WAIT", "MAX_UNSAVED", "Journaling", "Ledger", "finish_change", "forget_sweeps"]
