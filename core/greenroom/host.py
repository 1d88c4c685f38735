"""PluginHost: the pluggy manager greenroom calls hooks through, and the errors that
name the plugin, distribution and hook a failure came from."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Any

import pluggy

from greenroom import hookspecs

if TYPE_CHECKING:
    from greenroom.plugins import PluginRecord


class PluginLoadError(Exception):
    """A plugin that could not be imported or set up."""


class PluginHookError(Exception):
    """An exception raised inside a plugin's hook, with who raised it."""

    def __init__(self, plugin: str, distribution: str, hook: str, error: BaseException) -> None:
        self.plugin = plugin
        self.distribution = distribution
        self.hook = hook
        self.error = error
        super().__init__(
            f"plugin {plugin!r} (distribution {distribution}) failed in hook {hook}: {type(error).__name__}: {error}"
        )


class PluginHost:
    """A pluggy manager plus what greenroom knows about each plugin.

    Hooks are called through ``call`` / ``call_first`` so async implementations are
    awaited and any exception names the plugin, its distribution and the hook.
    """

    def __init__(self, records: Sequence[PluginRecord]) -> None:
        self.pm = pluggy.PluginManager(hookspecs.PROJECT)
        self.pm.add_hookspecs(hookspecs)
        self.records = list(records)
        self._dist: dict[str, str] = {r.name: r.label for r in records}
        self._async_hooks: dict[str, bool] = {}
        self._spec_sources: list[ModuleType | type] = []

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
        self._async_hooks.clear()
        dist = self._dist.get(name, "?")
        for hook_caller in self.pm.get_hookcallers(plugin) or ():
            for impl in hook_caller.get_hookimpls():
                if impl.plugin is plugin and not (impl.hookwrapper or impl.wrapper):
                    impl.function = _guard(impl.function, name, dist, hook_caller.name)  # type: ignore[misc]

    def plugin(self, name: str) -> Any:
        return self.pm.get_plugin(name)

    @property
    def hook(self) -> Any:
        return self.pm.hook

    def has_impls(self, hook_name: str) -> bool:
        return bool(getattr(self.pm.hook, hook_name).get_hookimpls())

    # ---------------------------------------------------------------- calling
    async def call(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call every implementation in pluggy's order, each finishing before the next starts."""
        caller = getattr(self.pm.hook, hook_name)
        if not self._has_async(caller):
            return list(caller(**kwargs))  # plain pluggy call: wrappers apply as usual
        return await self._walk(caller, kwargs, first=False)

    async def call_first(self, hook_name: str, **kwargs: Any) -> Any:
        """Call a firstresult hook: the first non-None answer, async ones included."""
        caller = getattr(self.pm.hook, hook_name)
        if not self._has_async(caller):
            return caller(**kwargs)  # plain pluggy call: wrappers apply as usual
        answers = await self._walk(caller, kwargs, first=True)
        return answers[0] if answers else None

    def _has_async(self, caller: Any) -> bool:
        """Whether any implementation of the hook is async (cached until a plugin registers:
        asked at every phase of every step)."""
        found = self._async_hooks.get(caller.name)
        if found is None:
            found = any(inspect.iscoroutinefunction(_unwrap(i.function)) for i in caller.get_hookimpls())
            self._async_hooks[caller.name] = found
        return found

    @staticmethod
    async def _walk(caller: Any, kwargs: dict[str, Any], *, first: bool) -> list[Any]:
        """The non-None answers in pluggy's own call order (tryfirst, last registered,
        trylast), each awaited before the next implementation is called: pluggy itself
        would only create the coroutines, so a sync implementation later in the order would
        run before an earlier async one had finished."""
        out = []
        for impl in reversed(caller.get_hookimpls()):
            if impl.hookwrapper or impl.wrapper:
                continue
            r = impl.function(*[kwargs[a] for a in impl.argnames])
            if inspect.isawaitable(r):
                r = await r
            if r is not None:
                out.append(r)
                if first:
                    break
        return out

    def call_sync(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call a contribution hook outside the event loop (async answers are rejected)."""
        results = getattr(self.pm.hook, hook_name)(**kwargs)
        for r in results:
            if inspect.isawaitable(r):
                r.close()  # type: ignore[attr-defined]
                raise PluginLoadError(f"{hook_name} must not be async")
        return list(results)


def _unwrap(func: Any) -> Any:
    return getattr(func, "__wrapped__", func)


def _guard(func: Any, plugin: str, dist: str, hook: str) -> Any:
    """Wrap one hook implementation so its exceptions name the plugin."""
    if inspect.iscoroutinefunction(func):

        @functools.wraps(func)
        async def aguarded(*args: Any, **kwargs: Any) -> Any:
            try:
                return await func(*args, **kwargs)
            except PluginHookError:
                raise
            except Exception as exc:
                raise PluginHookError(plugin, dist, hook, exc) from exc

        return aguarded

    @functools.wraps(func)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except PluginHookError:
            raise
        except Exception as exc:
            raise PluginHookError(plugin, dist, hook, exc) from exc

    return guarded
