"""Plugin contract, discovery through entry points, and the plugin-manager factory.

Built-in plugins are found exactly like third-party ones: through the entry-point group
``greenroom.plugins``. Discovery lists and sorts the entry points, then loads each in its
own try/except, so one broken distribution is reported (by distribution and entry point)
and never takes the others down. The manager is built by ``make_plugin_host`` and passed
in; nothing is created at import time.
"""

from __future__ import annotations

import importlib.metadata as md
import os
from collections.abc import Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import attrs
import pluggy

from greenroom import hookspecs

# re-exported from where they were first defined
from greenroom.host import PluginHookError as PluginHookError
from greenroom.host import PluginHost, PluginLoadError
from greenroom.tools.schema import schema_for_attrs

ENTRY_POINT_GROUP = "greenroom.plugins"
AUTOLOAD_ENV = "GREENROOM_DISABLE_PLUGIN_AUTOLOAD"

hookimpl = pluggy.HookimplMarker(hookspecs.PROJECT)


@attrs.frozen
class NoConfig:
    """A plugin without options."""


class Plugin:
    """Base class for greenroom plugins.

    Subclasses set ``name`` (the entry-point name), ``config_class`` (a frozen attrs class
    whose fields are the keys of ``[plugins.<name>]``) and implement hooks with
    ``@hookimpl``. ``config_schema()`` is derived from ``config_class``; override it to
    add constraints the types cannot say. ``default_enabled = False`` makes a plugin
    opt-in: installed, listed, but active only when ``[plugins] enable`` names it.
    """

    name: ClassVar[str] = ""
    config_class: ClassVar[type] = NoConfig
    default_enabled: ClassVar[bool] = True
    hookspecs: ClassVar[ModuleType | type | None] = None
    """A module or class of ``@hookspec`` functions: hooks this plugin declares and calls
    (``ctx.call_hook``) and other plugins implement, like pytest's ``pytest_addhooks``."""

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.config_class()

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return schema_for_attrs(cls.config_class)


@attrs.define
class PluginRecord:
    """One discovered plugin and what happened when it was loaded."""

    name: str
    distribution: str
    version: str
    entry_point: str
    cls: type[Plugin] | None = None
    error: str | None = None
    enabled: bool = False
    instance: Plugin | None = None

    @property
    def label(self) -> str:
        return f"{self.distribution} {self.version}".strip()

    def hooks(self) -> list[str]:
        target = self.instance or self.cls
        if target is None:
            return []
        return sorted(
            n for n in dir(target) if n.startswith("greenroom_") and hasattr(getattr(target, n, None), "greenroom_impl")
        )


def discover(group: str = ENTRY_POINT_GROUP) -> list[PluginRecord]:
    """Find and import every plugin in the entry-point group, each in its own try."""
    seen: dict[str, md.EntryPoint] = {}
    for ep in md.entry_points(group=group):
        seen.setdefault(ep.name, ep)  # one distribution installed twice lists it twice
    records: list[PluginRecord] = []
    for name in sorted(seen):
        ep = seen[name]
        dist = getattr(ep, "dist", None)
        record = PluginRecord(
            name=name,
            distribution=dist.name if dist is not None else "?",
            version=dist.version if dist is not None else "",
            entry_point=f"{name} = {ep.value}",
        )
        try:
            obj = ep.load()
            if not (isinstance(obj, type) and issubclass(obj, Plugin)):
                raise PluginLoadError(f"{ep.value} is not a greenroom.Plugin subclass")
            record.cls = obj
        except Exception as exc:
            record.error = (
                f"distribution {record.distribution}, entry point {record.entry_point!r}: {type(exc).__name__}: {exc}"
            )
        records.append(record)
    return records


def autoload_disabled() -> bool:
    return os.environ.get(AUTOLOAD_ENV, "").strip().lower() not in ("", "0", "false", "no")


def select_enabled(records: Iterable[PluginRecord], enable: Sequence[str], disable: Sequence[str]) -> None:
    """Mark which discovered plugins are active.

    With autoload on, every plugin whose ``default_enabled`` is true is active unless
    disabled; opt-in plugins need ``enable``. With ``GREENROOM_DISABLE_PLUGIN_AUTOLOAD``
    set, only the plugins named in ``enable`` are active.
    """
    auto = not autoload_disabled()
    for r in records:
        if r.cls is None:
            r.enabled = False
            continue
        wanted = r.name in enable or (auto and r.cls.default_enabled)
        r.enabled = wanted and r.name not in disable


def make_plugin_host(
    configs: Mapping[str, Any] | None = None,
    *,
    enable: Sequence[str] = (),
    disable: Sequence[str] = (),
    records: Sequence[PluginRecord] | None = None,
    extra: Iterable[Plugin] = (),
) -> PluginHost:
    """Build a plugin host: discover, choose, instantiate with config, register.

    ``configs`` maps plugin names to already-structured config objects (see
    ``greenroom.config``). ``extra`` registers plugin instances directly, which tests
    and embedding applications use for plugins that are not installed.
    """
    recs = list(records) if records is not None else discover()
    select_enabled(recs, enable, disable)
    host = PluginHost(recs)
    # every installed plugin's own hooks are known, enabled or not, so a plugin that
    # implements another plugin's hook is valid whether or not that plugin is on
    for cls in [r.cls for r in recs if r.cls is not None] + [type(p) for p in extra]:
        specs = getattr(cls, "hookspecs", None)
        if specs is not None:
            host.add_hookspecs(specs)
    configs = configs or {}
    for r in recs:
        if not r.enabled or r.cls is None:
            continue
        try:
            r.instance = r.cls(configs.get(r.name))
        except Exception as exc:
            raise PluginLoadError(
                f"plugin {r.name!r} (distribution {r.label}) failed to start: {type(exc).__name__}: {exc}"
            ) from exc
        host.register(r.instance, r.name, r.label)
    for plugin in extra:
        name = getattr(plugin, "name", "") or type(plugin).__name__
        host.register(plugin, name, f"{type(plugin).__module__} (not installed)")
    return host
