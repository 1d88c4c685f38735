"""PluginHost: the pluggy manager greenroom calls hooks through.

Order (tryfirst, trylast, last registered first), firstresult and old- and new-style
wrappers behave as pluggy documents. A hook none of whose implementations wait is a plain
pluggy call; a hook with one that waits (an ``async def``, or a plain one run off the
event loop) is called by one async loop over the same implementations in the same order,
each awaited before the next starts (``greenroom.plugins.calling``).
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, Protocol

import pluggy

from greenroom.failures import PluginHookError
from greenroom.plugins.calling import call_async, wrap
from greenroom.plugins.checks import ASYNC_OBSERVER, OBSERVER_HOOK
from greenroom.plugins.markers import PROJECT
from greenroom.plugins.offloop import is_async, runs_in_thread
from greenroom.plugins.owners import Owner, attributing, collecting, collecting_now, own_calls


class Labelled(Protocol):
    """A plugin's record as the host needs it: its name and its distribution's label."""

    @property
    def name(self) -> str: ...

    @property
    def label(self) -> str: ...


class PluginLoadError(Exception):
    """A plugin that could not be imported or set up."""


class PluginHost:
    """A pluggy manager plus what greenroom knows about each plugin.

    Hooks are called through ``call`` / ``call_first`` (in the event loop), ``call_each``
    (every implementation even when some fail) and ``call_sync`` (outside the loop); any
    exception names the plugin, its distribution and the hook (``PluginHookError``).
    """

    def __init__(self, records: Sequence[Labelled], specs: ModuleType) -> None:
        """``specs``: the module of core's hooks (``greenroom.hookspecs``)."""
        self.pm = pluggy.PluginManager(PROJECT)
        self.pm.add_hookspecs(specs)
        self._dist: dict[str, str] = {r.name: r.label for r in records}
        self._async_impls: dict[str, list[str]] = {}  # hook name -> plugins with an async implementation
        self._spec_sources: list[ModuleType | type] = []
        self.hook_timeout: float | None = None
        """Seconds an implementation that waits may take during a run (the agent's
        ``tool_timeout``, set by the runtime); None: unbounded."""
        self._trace: _Trace | None = None
        if os.environ.get("GREENROOM_TRACE_HOOKS", "").strip() not in ("", "0"):
            self._trace = trace_hook_calls(self.pm)

    # ---------------------------------------------------------------- registration
    def add_hookspecs(self, specs: ModuleType | type) -> None:
        """Declare a plugin's own hooks (once per module or class)."""
        if specs not in self._spec_sources:
            self._spec_sources.append(specs)
            self.pm.add_hookspecs(specs)

    def register(self, plugin: object, name: str, distribution: str = "") -> None:
        if distribution:
            self._dist[name] = distribution
        self.pm.register(plugin, name=name)
        dist = self._dist.get(name, "?")
        nonblocking = bool(getattr(plugin, "nonblocking", False))
        for hook_caller in self.pm.get_hookcallers(plugin) or ():
            for impl in hook_caller.get_hookimpls():
                if impl.plugin is not plugin:
                    continue
                is_wrapper = bool(impl.hookwrapper or impl.wrapper)
                threaded = not is_wrapper and runs_in_thread(impl.function, hook_caller.name, nonblocking)
                if not is_wrapper and (threaded or is_async(impl.function)):
                    self._async_impls.setdefault(hook_caller.name, []).append(name)
                if hook_caller.name == OBSERVER_HOOK and is_async(impl.function):
                    # discovery refuses such a plugin; this is for one registered by hand
                    raise PluginLoadError(f"plugin {name!r} (distribution {dist}): {OBSERVER_HOOK} {ASYNC_OBSERVER}")
                owner = Owner(name, dist, hook_caller.name)
                impl.function = wrap(  # type: ignore[misc]
                    impl.function, owner, wrapper=is_wrapper, threaded=threaded, limit=self._limit
                )

    def _limit(self) -> float | None:
        return self.hook_timeout

    def plugin(self, name: str) -> Any:
        return self.pm.get_plugin(name)

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def has_impls(self, hook_name: str) -> bool:
        return bool(getattr(self.pm.hook, hook_name).get_hookimpls())

    # ---------------------------------------------------------------- calling
    async def call(self, hook_name: str, **kwargs: Any) -> Any:
        """Call a hook as pluggy does (a list of the non-None answers; for a firstresult
        hook the first one), awaiting async implementations in pluggy's order."""
        if collecting_now():  # called from inside an implementation: a call of its own
            with own_calls():
                return await self._call(hook_name, kwargs)
        return await self._call(hook_name, kwargs)

    async def _call(self, hook_name: str, kwargs: Any) -> Any:
        caller = getattr(self.pm.hook, hook_name)
        if hook_name not in self._async_impls:
            return caller(**kwargs)  # the hot path: several hooks a step
        if self._trace is None:
            return await call_async(caller, kwargs)
        began, failed = time.perf_counter(), True
        try:
            answer = await call_async(caller, kwargs)
            failed = False
            return answer
        finally:
            self._trace(hook_name, caller.get_hookimpls(), began, failed)

    async def call_first(self, hook_name: str, **kwargs: Any) -> Any:
        """The first non-None answer, or None: pluggy's answer for a firstresult hook (later
        implementations are not called), the first of the list for any other."""
        answer = await self.call(hook_name, **kwargs)
        if getattr(self.pm.hook, hook_name).spec.opts.get("firstresult"):
            return answer
        return answer[0] if answer else None

    async def call_each(self, hook_name: str, **kwargs: Any) -> tuple[list[Any], list[PluginHookError]]:
        """Call every implementation even when some fail (a hook every plugin must see, such
        as RunEnd): the answers of those that did not fail, and the failures."""
        if not self.has_impls(hook_name):
            return [], []  # the common case for many hooks: nothing to call, nothing to collect
        with collecting() as failures:
            answers = await self._call(hook_name, kwargs)
        return list(answers or ()), failures

    async def call_attributed(self, hook_name: str, **kwargs: Any) -> list[tuple[str, Any]]:
        """Call a hook as ``call`` does, and return each non-None answer with the name of
        the plugin that gave it (in pluggy's order)."""
        with attributing() as answers:
            await self._call(hook_name, kwargs)
        return [(owner.plugin, a) for owner, a in answers if owner.hook == hook_name and a is not None]

    def call_each_sync(self, hook_name: str, **kwargs: Any) -> tuple[list[Any], list[PluginHookError]]:
        """``call_each`` for a hook whose implementations are all plain (events)."""
        with collecting() as failures:
            answers = self._call_sync(hook_name, kwargs)
        return answers, failures

    def call_sync(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call a contribution hook outside the event loop; its implementations must not be async."""
        if collecting_now():  # called from inside an implementation: a call of its own
            with own_calls():
                return self._call_sync(hook_name, kwargs)
        return self._call_sync(hook_name, kwargs)

    def _call_sync(self, hook_name: str, kwargs: Any) -> list[Any]:
        async_plugins = self._async_impls.get(hook_name)
        if async_plugins:
            raise PluginLoadError(
                f"plugin {async_plugins[0]!r} (distribution {self._dist.get(async_plugins[0], '?')}) implements "
                f"{hook_name} as 'async def', but this hook is called synchronously: make it a plain 'def'"
            )
        return list(getattr(self.pm.hook, hook_name)(**kwargs))


_Trace = Callable[[str, Sequence[Any], float, bool], None]
"""Prints one hook call: its name, the implementations it reached, when it began, whether it failed."""


def trace_hook_calls(pm: pluggy.PluginManager) -> _Trace:
    """Print every hook call to stderr once, with the plugins it reached and its time
    (``GREENROOM_TRACE_HOOKS=1``): pluggy's own calls through its hook-call monitoring,
    and the calls of hooks that wait through the printer this returns."""

    def report(hook_name: str, impls: Sequence[Any], began: float, failed: bool) -> None:
        took = (time.perf_counter() - began) * 1000
        names = ", ".join(i.plugin_name for i in impls) or "-"
        print(f"greenroom hook {hook_name} [{names}] {took:.3f} ms{' failed' if failed else ''}", file=sys.stderr)

    started: list[float] = []

    def before(hook_name: str, impls: Sequence[Any], kwargs: Any) -> None:
        started.append(time.perf_counter())

    def after(outcome: Any, hook_name: str, impls: Sequence[Any], kwargs: Any) -> None:
        report(hook_name, impls, started.pop() if started else time.perf_counter(), outcome.exception is not None)

    pm.add_hookcall_monitoring(before, after)
    return report
