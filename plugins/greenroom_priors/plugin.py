"""The ``priors-persistence`` plugin: load ToolPriors at RunStart, fold and save at RunEnd.

Every run counts as one session of the EWMA (a session with three runs teaches three
times): a run is the unit whose tool use ``ToolUsage`` records, and counting runs lets
each process save independently, with no end-of-session signal to wait for. Runs with
no model step teach nothing and are not saved.

With a store a fleet shares, AfterToolExecute tallies each successful call in the run's
ledger (``ctx.state[RunLedger]``) and returns: the store's keeper checkpoints the tallies
into its journal behind the calls, and RunEnd folds the run from there. What the store
cannot take waits in the spool (``greenroom_priors.keeper``, ``greenroom_priors.spool``).
``greenroom_readiness`` says whether the store answers.
"""

from __future__ import annotations

import logging
import threading
import uuid
from collections.abc import Callable, Iterable, Mapping
from types import ModuleType
from typing import Any, ClassVar

import anyio
import anyio.to_thread

import greenroom_priors.hookspecs
from greenroom import (
    ConfigError,
    Plugin,
    PluginWarning,
    Readiness,
    RunContext,
    RunOutcome,
    Runtime,
    Scope,
    StateRegistry,
    ToolCall,
    ToolPriors,
    ToolResult,
    hookimpl,
)
from greenroom_priors import together
from greenroom_priors.config import PriorsConfig, config_schema
from greenroom_priors.events import PriorsLoaded, PriorsSaved
from greenroom_priors.ewma import check_document, probabilities, utc_now
from greenroom_priors.journal import PriorsSwept, ToolTally, fold_runs, has_journal
from greenroom_priors.keeper import RETRY_AFTER, Keeper, Spooled, not_retried
from greenroom_priors.keys import KEY, NAME, STORE_KEY
from greenroom_priors.ledger import RunLedger
from greenroom_priors.spool import SpooledRun
from greenroom_priors.store import ProfileStore, StoreError, StoreFactory
from greenroom_priors.stores import (
    absolutize,
    builtin_factories,
    default_url,
    describe,
    merge_factories,
    open_store,
    redact,
    scheme_of,
    unknown_scheme,
)

log = logging.getLogger("greenroom.priors")

JOURNAL_NEEDS = (
    "journal = true needs a store that keeps a journal of calls (postgresql://...); an SQLite file "
    'keeps none. Set journal = "auto" (on for postgresql stores) or false'
)
READY_FRESH = 5.0
"""Seconds a store's last answer stands for readiness, without asking it again."""
READY_WAIT = 5.0
"""Seconds a readiness probe waits for the store at most (less within a shorter tool timeout)."""


def fill(priors: ToolPriors, doc: Mapping[str, Any] | None) -> None:
    """``priors`` as a checked document (None: no history) says."""
    priors.p = probabilities(doc) if doc else {}
    priors.sessions = int(doc["sessions"]) if doc else 0
    priors.sets = together.usage_sets(doc) if doc else {}
    priors.steps = float(doc["steps"]) if doc else 0.0
    priors.loaded = True


class PriorsPlugin(Plugin):
    """Per-agent tool priors, learned across sessions and kept in a profile store."""

    name = NAME
    config_class = PriorsConfig
    hookspecs: ClassVar[ModuleType | type | None] = greenroom_priors.hookspecs

    def __init__(self, config: PriorsConfig | None = None) -> None:
        super().__init__(config)
        self.config: PriorsConfig
        self._stores: dict[str, Keeper] = {}  # by store URL: what the runtime shares, never a run's
        self._lock = threading.Lock()
        if not self._may_journal():
            # no AfterToolExecute at all: a call of a runtime that cannot journal costs
            # nothing here (pluggy registers what the instance has, and None is no hook)
            self.greenroom_after_tool_execute = None  # type: ignore[assignment]

    def _may_journal(self) -> bool:
        """Whether a run of this configuration may journal: not with journal = false or
        save = false, nor with "auto" on a built-in store that keeps none by default."""
        cfg = self.config
        if cfg.journal is False or not cfg.save:
            return False
        local = cfg.store is None or scheme_of(cfg.store) in ("sqlite", "memory")
        return not (cfg.journal == "auto" and local)

    def _journals(self, store: ProfileStore) -> bool:
        """Whether runs journal into ``store``; ``journal = true`` on a store without a
        journal is a ``StoreError``."""
        setting = self.config.journal
        if not self._may_journal():
            return False
        if not has_journal(store):
            if setting is True:
                raise StoreError(
                    f"{describe(store)} keeps no journal of calls: journal = true needs a store that "
                    'does (postgresql://...); set journal = "auto" or false'
                )
            return False
        return setting is True or bool(getattr(store, "journal_by_default", False))

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return config_schema(super().config_schema())

    # ------------------------------------------------------------------ contributions
    @hookimpl(trylast=True)
    def greenroom_profile_stores(self) -> Mapping[str, StoreFactory]:
        return builtin_factories()

    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(RunLedger, Scope.RUN, owner=self.name)

    @hookimpl
    def greenroom_cli_commands(self, app: Any) -> None:
        # imported here: the command's modules are not needed to run an agent
        from greenroom_priors.cli import priors_app

        app.add_typer(priors_app, name="priors")

    @hookimpl
    def greenroom_check_config(self, runtime: Runtime) -> list[ConfigError]:
        # `greenroom config check`: a store URL whose scheme no plugin of this runtime
        # provides fails every run; say so now, without opening the store
        url = self.config.store
        journal_file = self.config.journal is True and (url is None or url.lower().startswith("sqlite:"))
        errors = []
        if journal_file:  # the one built-in store without a journal (memory has one, for tests)
            errors.append(ConfigError(JOURNAL_NEEDS, path=f"plugins.{NAME}.journal"))
        if url is None:
            return errors
        try:
            problem = unknown_scheme(url, merge_factories(runtime.host.call_sync("greenroom_profile_stores")))
        except StoreError as exc:  # no scheme at all: the section's schema refuses it first
            problem = str(exc)
        return errors if problem is None else [*errors, ConfigError(problem, path=STORE_KEY)]

    # ------------------------------------------------------------------ stores
    def store_url(self, ctx: RunContext) -> str:
        url = self.config.store
        if url is None:
            return default_url()
        # None when built in Python, not from a file: nothing to be relative to
        return absolutize(url, ctx.config_dir(STORE_KEY))

    def _keeper(self, url: str, answers: Callable[[], Iterable[Any]], on_close: Callable[[Any], None]) -> Keeper:
        """The keeper of the store at ``url`` for this runtime, made once and closed with it."""
        with self._lock:
            keeper = self._stores.get(url)
            if keeper is not None:
                return keeper
            factories = merge_factories(answers())
            keeper = self._stores[url] = Keeper(url, lambda: open_store(url, factories), self.config)

        async def close() -> None:
            with self._lock:
                self._stores.pop(url, None)
            await anyio.to_thread.run_sync(keeper.close)

        on_close(close)
        return keeper

    async def checkpoint(self) -> None:
        """Write every open run's calls now, and save what waits in the spool, whether
        or not a store failed lately (a test; an operator who knows the store is back)."""
        for keeper in list(self._stores.values()):
            await anyio.to_thread.run_sync(keeper.checkpoint, True)

    def _warn(self, ctx: RunContext, hook: str, message: str) -> None:
        log.warning("priors-persistence: %s", message)
        ctx.emit(PluginWarning(plugin=self.name, hook=hook, message=message))

    def _trouble(self, ctx: RunContext, hook: str, doing: str, exc: BaseException) -> None:
        """A store problem at run start or end: fail the run if configured so, else warn and go on."""
        if self.config.on_store_error == "raise":
            raise exc
        self._warn(ctx, hook, f"{doing} for agent {ctx.agent.id!r} failed, going on without: {exc}")

    def _news(self, ctx: RunContext, keeper: Keeper, hook: str) -> None:
        news = keeper.take_news()
        if news is not None:
            self._warn(ctx, hook, news)

    # ------------------------------------------------------------------ phases
    @hookimpl(tryfirst=True)
    async def greenroom_run_start(self, ctx: RunContext) -> None:
        # tryfirst: deferred-tools and search-ranking read ctx.priors in their own RunStart,
        # and the host awaits this one before calling them. Store I/O runs in a worker
        # thread (the keeper's, one at a time), so a slow database never blocks the event
        # loop; a store that just failed is not asked again for RETRY_AFTER seconds.
        priors = ctx.priors
        priors.default = self.config.default_prior
        agent = ctx.agent.id
        keeper = self._keeper(self.store_url(ctx), lambda: ctx.call_hook("greenroom_profile_stores"), ctx.on_close)
        self._news(ctx, keeper, "greenroom_run_start")
        try:
            reason = keeper.down()
            if reason is not None:
                raise StoreError(not_retried(reason))
            # the keeper opens the store and saves what waits in the spool first
            raw = await anyio.to_thread.run_sync(keeper.use, lambda store: store.read(agent, KEY))
            doc = check_document(raw, f"{keeper}, agent {agent!r}") if raw is not None else None
        except Exception as exc:  # the run goes on with what is in memory (defaults in a fresh runtime)
            self._begin(ctx, keeper)  # its calls are counted all the same, and spooled
            self._trouble(ctx, "greenroom_run_start", "loading tool priors", exc)
            source = "memory (store unavailable)" if priors.loaded else "defaults"
            ctx.emit(PriorsLoaded(agent_id=agent, tools=len(priors.p), sessions=priors.sessions, source=source))
            return
        self._begin(ctx, keeper)
        fill(priors, doc)
        ctx.emit(PriorsLoaded(agent_id=agent, tools=len(priors.p), sessions=priors.sessions, source=str(keeper)))
        await self._sweep(ctx, keeper)

    def _begin(self, ctx: RunContext, keeper: Keeper) -> None:
        """The run's ledger, when its calls are journaled (into a store that was opened)."""
        try:
            if keeper.store is None or not self._journals(keeper.store):
                return
        except StoreError as exc:
            self._trouble(ctx, "greenroom_run_start", "journaling tool calls", exc)
            return
        ledger = ctx.state[RunLedger]
        # the run's own id is short (12 hex digits): the journal's must be unique in a fleet
        ledger.keeper, ledger.agent, ledger.run = keeper, ctx.agent.id, f"{ctx.run_id}-{uuid.uuid4().hex}"

    async def _sweep(self, ctx: RunContext, keeper: Keeper) -> None:
        """Fold the journal of runs whose process died, at most every ``sweep_every`` seconds."""
        store = keeper.store
        if not self._may_journal() or not has_journal(store) or not keeper.sweep_due(self.config.sweep_every):
            return
        floor, now, where = self.config.min_smoothing, utc_now(), describe(store)

        def change(current: Mapping[str, Any] | None, runs: Any) -> Mapping[str, Any]:
            return fold_runs(current, runs, now=now, floor=floor, where=f"{where}, agent {runs[0].agent_id!r}")

        try:
            stale = self.config.journal_stale
            report = await anyio.to_thread.run_sync(keeper.use, lambda _: store.sweep(KEY, stale, change))
        except Exception as exc:
            log.warning("priors-persistence: sweeping the journal of %s failed: %s", where, exc)
            return
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

    @hookimpl
    async def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        # on the event loop, without waiting: the call is counted and its result goes back
        ledger = ctx.state[RunLedger]
        keeper = ledger.keeper
        if keeper is None or ledger.closed or result.is_error or call.name not in ctx.usage.called_in(ctx.step):
            return
        keeper.tally(ledger, call.name, ctx.step, max(ctx.usage.steps, ctx.step))
        self._news(ctx, keeper, "greenroom_after_tool_execute")

    @hookimpl
    async def greenroom_run_end(self, ctx: RunContext, outcome: RunOutcome) -> None:
        ledger = ctx.state[RunLedger]
        if ledger.keeper is not None:
            ledger.keeper.release(ledger)
        usage = ctx.usage
        keeper = self._stores.get(self.store_url(ctx))
        if not self.config.save or usage.steps <= 0 or keeper is None:
            return
        self._news(ctx, keeper, "greenroom_run_end")
        available = None
        if self.config.decay_unused:
            available = frozenset(d.name for d in ctx.visible_descriptors())
        journal = ledger.keeper is not None and bool(ledger.calls)
        if journal:  # its successful calls, from the journal's rows
            tools = {name: ToolTally(n, ledger.steps[name]) for name, n in ledger.calls.items()}
        else:  # its calls, folded into the document directly
            tools = {name: ToolTally(n, 0) for name, n in usage.counts().items()}
        run = SpooledRun(
            ctx.agent.id,
            ledger.run or f"{ctx.run_id}-{uuid.uuid4().hex}",
            max(ledger.run_steps, usage.steps),
            tools,
            journal,
            stored=ledger.stored if journal else {},
            ended=True,
            presence=usage.presence(),
            available=available,
            now=utc_now(),
            floor=self.config.min_smoothing,
            failed=tuple(
                (query[: together.MAX_QUERY], found[: together.MAX_FOUND]) for query, found in usage.failed_searches()
            ),
        )
        try:
            saved = await anyio.to_thread.run_sync(keeper.save, run, ledger.spooled)
        except Spooled as exc:
            if self.config.on_store_error == "raise":
                raise
            self._warn(ctx, "greenroom_run_end", f"saving tool priors: {exc}")
            return
        except Exception as exc:
            self._trouble(ctx, "greenroom_run_end", "saving tool priors", exc)
            return
        if saved is not None:  # None: a sweep or an earlier save had folded all of it already
            where = f"{describe(keeper)}, agent {ctx.agent.id!r}"
            priors = ctx.priors
            fill(priors, check_document(saved, where))
            ctx.emit(PriorsSaved(agent_id=ctx.agent.id, tools=len(priors.p), sessions=priors.sessions))
        await self._sweep(ctx, keeper)

    # ------------------------------------------------------------------ readiness
    @hookimpl
    async def greenroom_readiness(self, runtime: Runtime) -> list[Readiness] | None:
        # every few seconds per replica: answered from the store's last outcome when it is
        # recent (a failure within RETRY_AFTER, an answer within READY_FRESH), else by one
        # SELECT 1 in a worker thread. File stores need nothing outside the process.
        url = self.config.store
        if url is None or scheme_of(url) == "sqlite":
            return None
        cfg = runtime.config
        url = absolutize(url, None if cfg is None else cfg.dir_of(STORE_KEY))
        keeper = self._keeper(url, lambda: runtime.host.call_sync("greenroom_profile_stores"), runtime.on_close)
        try:
            store = keeper.store or await anyio.to_thread.run_sync(keeper.use, lambda store: store)
        except Exception as exc:
            return [Readiness(f"priors store {redact(url)}", False, str(exc))]
        ping = getattr(store, "ping", None)
        if ping is None:
            return None
        name = f"priors store {describe(store)}"
        reason = keeper.down()
        if reason is not None:
            return [Readiness(name, False, f"{reason} (failed within the last {RETRY_AFTER:g} s)")]
        if keeper.answered_within(READY_FRESH):
            return [Readiness(name, True, "answered lately")]
        wait = min(READY_WAIT, runtime.agent.tool_timeout / 2)
        try:
            with anyio.fail_after(wait):
                await anyio.to_thread.run_sync(keeper.use, lambda _: ping(), abandon_on_cancel=True)
        except TimeoutError:  # slow, perhaps busy: not ready, but runs may still wait for it
            return [Readiness(name, False, f"no answer within {wait:g} s")]
        except Exception as exc:  # refused: runs need not wait on it either (the keeper knows)
            return [Readiness(name, False, str(exc))]
        return [Readiness(name, True, "answered SELECT 1")]


__all__ = ["KEY", "RETRY_AFTER", "PriorsPlugin", "StoreError"]
