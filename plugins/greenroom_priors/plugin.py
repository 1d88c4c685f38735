"""The ``priors-persistence`` plugin: load ToolPriors at RunStart, fold and save at RunEnd.

Every run counts as one session of the EWMA (a session with three runs teaches three
times): a run is the unit whose tool use ``ToolUsage`` records, and counting runs lets
each process save independently, with no end-of-session signal to wait for. Runs with
no model step teach nothing and are not saved.

With a store a fleet shares, AfterToolExecute also writes each successful call into the
store's journal before the call's result goes back, and RunEnd folds the run from there
(``greenroom_priors.journaling``). ``greenroom_readiness`` says whether the store answers.
"""

from __future__ import annotations

import logging
import threading
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
    ToolCall,
    ToolResult,
    hookimpl,
)
from greenroom_priors import health
from greenroom_priors.config import PriorsConfig, config_schema
from greenroom_priors.events import PriorsLoaded, PriorsSaved
from greenroom_priors.ewma import Observation, check_document, fold_document, probabilities, utc_now
from greenroom_priors.health import RETRY_AFTER, answered_within, down_reason, mark_down, mark_up, not_retried
from greenroom_priors.journaling import Journaling, finish_change, forget_sweeps
from greenroom_priors.keys import KEY, NAME, STORE_KEY
from greenroom_priors.store import ProfileStore, StoreError, StoreFactory
from greenroom_priors.stores import (
    absolutize,
    builtin_factories,
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


def forget_down_stores() -> None:
    """Forget every failure, answer and sweep time (tests; a process that knows its stores are back)."""
    health.forget_down_stores()
    forget_sweeps()


class PriorsPlugin(Plugin):
    """Per-agent tool priors, learned across sessions and kept in a profile store."""

    name = NAME
    config_class = PriorsConfig
    hookspecs: ClassVar[ModuleType | type | None] = greenroom_priors.hookspecs

    def __init__(self, config: PriorsConfig | None = None) -> None:
        super().__init__(config)
        self.config: PriorsConfig
        self._stores: dict[str, ProfileStore] = {}
        self._lock = threading.Lock()
        self._journal = Journaling(self.config, self._trouble)
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

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return config_schema(super().config_schema())

    # ------------------------------------------------------------------ contributions
    @hookimpl(trylast=True)
    def greenroom_profile_stores(self) -> Mapping[str, StoreFactory]:
        return builtin_factories()

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
    def store_url(self, ctx: RunContext) -> str | None:
        url = self.config.store
        if url is None:
            return None
        # None when built in Python, not from a file: nothing to be relative to
        return absolutize(url, ctx.config_dir(STORE_KEY))

    def store(self, ctx: RunContext) -> ProfileStore:
        """The store for this runtime, opened once per URL and closed with the runtime."""
        return self._open(self.store_url(ctx), lambda: ctx.call_hook("greenroom_profile_stores"), ctx.on_close)

    def _open(
        self, url: str | None, answers: Callable[[], Iterable[Any]], on_close: Callable[[Any], None]
    ) -> ProfileStore:
        with self._lock:
            cached = self._stores.get(url or "")
            if cached is not None:
                return cached
            store = open_store(url, merge_factories(answers()))
            self._stores[url or ""] = store
        on_close(self._closer(url or ""))
        return store

    def _closer(self, key: str) -> Any:
        def close() -> None:
            with self._lock:
                store = self._stores.pop(key, None)
            if store is not None:
                store.close()

        return close

    def _trouble(
        self, ctx: RunContext, hook: str, doing: str, exc: BaseException, then: str = "going on without"
    ) -> None:
        """A store problem: fail the run if configured so, else warn and go on."""
        if self.config.on_store_error == "raise":
            raise exc
        message = f"{doing} for agent {ctx.agent.id!r} failed, {then}: {exc}"
        log.warning("priors-persistence: %s", message)
        ctx.emit(PluginWarning(plugin=self.name, hook=hook, message=message))

    # ------------------------------------------------------------------ phases
    def _degrade(self, ctx: RunContext, exc: BaseException) -> None:
        """RunStart without the store: keep what is in memory (defaults in a fresh runtime)."""
        self._trouble(ctx, "greenroom_run_start", "loading tool priors", exc)
        priors = ctx.priors
        ctx.emit(
            PriorsLoaded(
                agent_id=ctx.agent.id,
                tools=len(priors.p),
                sessions=priors.sessions,
                source="memory (store unavailable)" if priors.loaded else "defaults",
            )
        )

    @hookimpl(tryfirst=True)
    async def greenroom_run_start(self, ctx: RunContext) -> None:
        # tryfirst: deferred-tools and search-ranking read ctx.priors in their own RunStart,
        # and the host awaits this one before calling them. The read runs in a worker thread
        # so a slow database never blocks the event loop. A store that just failed is not
        # retried for RETRY_AFTER seconds (by any runtime of this process, at run start or
        # end), so a down database costs one wait, not one or two per run.
        priors = ctx.priors
        priors.default = self.config.default_prior
        agent = ctx.agent.id
        url_key = self.store_url(ctx) or ""
        reason = down_reason(url_key)
        store = self._stores.get(url_key)
        if store is None and reason is None:
            try:
                store = await anyio.to_thread.run_sync(self.store, ctx)  # opening connects to nothing
            except Exception as exc:
                mark_down(url_key, exc)
                self._degrade(ctx, exc)
                return
        if store is not None:  # an open store that is down: the run still journals, later
            self._journal.begin(ctx, store, url_key)
        if reason is not None or store is None:
            self._degrade(ctx, not_retried(reason or "not opened"))
            return
        try:
            raw = await anyio.to_thread.run_sync(store.read, agent, KEY)
            doc = check_document(raw, f"{describe(store)}, agent {agent!r}") if raw is not None else None
        except Exception as exc:
            mark_down(url_key, exc)
            self._degrade(ctx, exc)
            return
        mark_up(url_key)
        priors.p = probabilities(doc) if doc else {}
        priors.sessions = doc["sessions"] if doc else 0
        priors.loaded = True
        ctx.emit(PriorsLoaded(agent_id=agent, tools=len(priors.p), sessions=priors.sessions, source=describe(store)))
        await self._tend(ctx, store, url_key)

    async def _tend(self, ctx: RunContext, store: ProfileStore, url_key: str) -> None:
        """After a run start or end that reached the store: save runs kept from before,
        and sweep the journal when it is time."""
        await self._journal.save_unsaved()
        await self._journal.sweep(ctx, store, url_key)

    @hookimpl
    async def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        # returns at once unless the run journals: only then does a call wait for the store
        await self._journal.record(ctx, call, result)

    @hookimpl
    async def greenroom_run_end(self, ctx: RunContext, outcome: RunOutcome) -> None:
        ledger = self._journal.take(ctx)
        usage = ctx.usage
        if not self.config.save or usage.steps <= 0:
            return
        available = None
        if self.config.decay_unused:
            available = frozenset(d.name for d in ctx.visible_descriptors())
        observation = Observation(presence=usage.presence(), counts=usage.counts(), available=available)
        agent = ctx.agent.id
        now = utc_now()
        floor = self.config.min_smoothing
        url_key = self.store_url(ctx) or ""
        if ledger is not None:  # the run's calls are in the journal: fold them from there
            where = f"{describe(ledger.store)}, agent {agent!r}"
            fold_journal = finish_change(observation, now=now, floor=floor, where=where)
            folded = await self._journal.finish(ctx, ledger, fold_journal)  # a failure is reported there
            if folded is not None:  # None: not saved, or a sweep had folded all of it already
                self._saved(ctx, folded, where)
            await self._tend(ctx, ledger.store, url_key)
            return
        reason = down_reason(url_key)
        if reason is not None:  # this run (or another, just now) already waited on it
            self._trouble(ctx, "greenroom_run_end", "saving tool priors", not_retried(reason))
            return

        try:
            store = await anyio.to_thread.run_sync(self.store, ctx)
            where = f"{describe(store)}, agent {agent!r}"

            def change(current: Mapping[str, Any] | None) -> Mapping[str, Any]:
                # the fold runs inside the store's transaction, on the document as it is
                # now (other processes may have saved since RunStart), so nothing is lost
                return fold_document(current, observation, now=now, floor=floor, where=where)

            saved = await anyio.to_thread.run_sync(store.update, agent, KEY, change)
        except Exception as exc:
            mark_down(url_key, exc)
            self._trouble(ctx, "greenroom_run_end", "saving tool priors", exc)
            return
        mark_up(url_key)  # it works again
        self._saved(ctx, saved, where)
        await self._tend(ctx, store, url_key)

    def _saved(self, ctx: RunContext, saved: Mapping[str, Any], where: str) -> None:
        priors = ctx.priors
        priors.p = probabilities(check_document(saved, where))
        priors.sessions = int(saved["sessions"])
        priors.loaded = True
        ctx.emit(PriorsSaved(agent_id=ctx.agent.id, tools=len(priors.p), sessions=priors.sessions))

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
        try:
            store = self._open(url, lambda: runtime.host.call_sync("greenroom_profile_stores"), runtime.on_close)
        except Exception as exc:
            return [Readiness(f"priors store {redact(url)}", False, str(exc))]
        ping = getattr(store, "ping", None)
        if ping is None:
            return None
        name = f"priors store {describe(store)}"
        reason = down_reason(url)
        if reason is not None:
            return [Readiness(name, False, f"{reason} (failed within the last {RETRY_AFTER:g} s)")]
        if answered_within(url, READY_FRESH):
            return [Readiness(name, True, "answered lately")]
        wait = min(READY_WAIT, runtime.agent.tool_timeout / 2)
        try:
            with anyio.fail_after(wait):
                await anyio.to_thread.run_sync(ping, abandon_on_cancel=True)
        except TimeoutError:  # slow, perhaps busy: not ready, but runs may still wait for it
            return [Readiness(name, False, f"no answer within {wait:g} s")]
        except Exception as exc:  # refused: runs need not wait on it either
            mark_down(url, exc)
            return [Readiness(name, False, str(exc))]
        mark_up(url)
        return [Readiness(name, True, "answered SELECT 1")]


__all__ = ["KEY", "RETRY_AFTER", "PriorsPlugin", "StoreError", "forget_down_stores"]
