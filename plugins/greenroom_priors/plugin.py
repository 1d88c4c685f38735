"""The ``priors-persistence`` plugin: load ToolPriors at RunStart, fold and save at RunEnd.

Every run counts as one session of the EWMA (a session with three runs teaches three
times): a run is the unit whose tool use ``ToolUsage`` records, and counting runs lets
each process save independently, with no end-of-session signal to wait for. Runs with
no model step teach nothing and are not saved.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from time import monotonic
from types import ModuleType
from typing import Any, ClassVar

import anyio.to_thread

import greenroom_priors.hookspecs
from greenroom import ConfigError, Plugin, PluginWarning, RunContext, RunOutcome, Runtime, hookimpl
from greenroom_priors.config import PriorsConfig, config_schema
from greenroom_priors.events import PriorsLoaded, PriorsSaved
from greenroom_priors.ewma import Observation, check_document, fold_document, probabilities, utc_now
from greenroom_priors.keys import KEY, NAME, STORE_KEY
from greenroom_priors.store import ProfileStore, StoreError, StoreFactory
from greenroom_priors.stores import (
    absolutize,
    builtin_factories,
    describe,
    merge_factories,
    open_store,
    unknown_scheme,
)

log = logging.getLogger("greenroom.priors")

RETRY_AFTER = 30.0  # seconds a store that failed is left alone

# url -> (monotonic time before which it is not tried again, why it failed). Kept for the
# process, not the runtime: every runtime a process builds pays one wait on a down store.
_DOWN: dict[str, tuple[float, str]] = {}
_DOWN_LOCK = threading.Lock()


def down_reason(url: str) -> str | None:
    """Why the store at ``url`` failed less than RETRY_AFTER seconds ago, else None."""
    with _DOWN_LOCK:
        until, reason = _DOWN.get(url, (0.0, ""))
    return reason if monotonic() < until else None


def mark_down(url: str, exc: BaseException) -> None:
    with _DOWN_LOCK:
        _DOWN[url] = (monotonic() + RETRY_AFTER, str(exc))


def mark_up(url: str) -> None:
    with _DOWN_LOCK:
        _DOWN.pop(url, None)


def forget_down_stores() -> None:
    """Forget every failure (tests; a process that knows its stores are back)."""
    with _DOWN_LOCK:
        _DOWN.clear()


def _not_retried(reason: str) -> StoreError:
    return StoreError(f"{reason} (failed less than {RETRY_AFTER:g} s ago; not retried yet)")


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
        if url is None:
            return []
        try:
            problem = unknown_scheme(url, merge_factories(runtime.host.call_sync("greenroom_profile_stores")))
        except StoreError as exc:  # no scheme at all: the section's schema refuses it first
            problem = str(exc)
        return [] if problem is None else [ConfigError(problem, path=STORE_KEY)]

    # ------------------------------------------------------------------ stores
    def store_url(self, ctx: RunContext) -> str | None:
        url = self.config.store
        if url is None:
            return None
        # None when built in Python, not from a file: nothing to be relative to
        return absolutize(url, ctx.config_dir(STORE_KEY))

    def store(self, ctx: RunContext) -> ProfileStore:
        """The store for this runtime, opened once per URL and closed with the runtime."""
        url = self.store_url(ctx)
        with self._lock:
            cached = self._stores.get(url or "")
            if cached is not None:
                return cached
            factories = merge_factories(ctx.call_hook("greenroom_profile_stores"))
            store = open_store(url, factories)
            self._stores[url or ""] = store
        ctx.on_close(self._closer(url or ""))
        return store

    def _closer(self, key: str) -> Any:
        def close() -> None:
            with self._lock:
                store = self._stores.pop(key, None)
            if store is not None:
                store.close()

        return close

    def _trouble(self, ctx: RunContext, hook: str, doing: str, exc: BaseException) -> None:
        """A store problem: fail the run if configured so, else warn and go on."""
        if self.config.on_store_error == "raise":
            raise exc
        message = f"{doing} for agent {ctx.agent.id!r} failed, going on without: {exc}"
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
        if reason is not None:
            self._degrade(ctx, _not_retried(reason))
            return
        try:
            store = await anyio.to_thread.run_sync(self.store, ctx)
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

    @hookimpl
    async def greenroom_run_end(self, ctx: RunContext, outcome: RunOutcome) -> None:
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
        reason = down_reason(url_key)
        if reason is not None:  # this run (or another, just now) already waited on it
            self._trouble(ctx, "greenroom_run_end", "saving tool priors", _not_retried(reason))
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
        priors = ctx.priors
        priors.p = probabilities(check_document(saved, where))
        priors.sessions = int(saved["sessions"])
        priors.loaded = True
        ctx.emit(PriorsSaved(agent_id=agent, tools=len(priors.p), sessions=priors.sessions))


__all__ = ["KEY", "RETRY_AFTER", "PriorsPlugin", "StoreError", "forget_down_stores"]
