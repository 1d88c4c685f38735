"""Build a runtime from a config file: plugins, their configs, tools and the model."""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from greenroom.config import ConfigError, ConfigErrors, RuntimeConfig, load_config, structure_plugin_config
from greenroom.events import EventBus
from greenroom.mcp.checks import check_mcp
from greenroom.models import Model, ProviderFactory
from greenroom.plugins import (
    Plugin,
    PluginHost,
    PluginRecord,
    PluginStartError,
    discover,
    make_plugin_host,
    select_enabled,
)
from greenroom.runtime import Runtime
from greenroom.tools import FunctionTool, Tool, ToolDescriptor, tool
from greenroom.tools.catalog import CatalogError, load_catalog
from greenroom.tools.groups import ToolGroup
from greenroom.tools.toolset import DuplicateToolError

if TYPE_CHECKING:
    from greenroom.mcp import McpToolset


def plugin_schemas(records: Iterable[PluginRecord]) -> dict[str, dict[str, Any]]:
    return {r.name: r.cls.config_schema() for r in records if r.cls is not None}


def load_runtime_config(
    path: str | Path, records: Sequence[PluginRecord] | None = None
) -> tuple[RuntimeConfig, list[PluginRecord]]:
    recs = list(records) if records is not None else discover()
    broken = {r.name: r.failure.message for r in recs if r.failure is not None}
    cfg = load_config(path, plugin_schemas=plugin_schemas(recs), broken_plugins=broken)
    check_mcp(cfg)  # here, so `greenroom config check` reports it without starting anything
    return cfg, recs


def plugin_configs(cfg: RuntimeConfig, records: Iterable[PluginRecord]) -> dict[str, Any]:
    """The structured config of every plugin the file enables or writes a section for (an
    opt-in plugin whose config class needs values is not asked for them unless used)."""
    recs = list(records)
    selection = select_enabled(recs, cfg.plugins.enable, cfg.plugins.disable)
    out: dict[str, Any] = {}
    errors: list[ConfigError] = []
    for r in recs:
        if r.cls is None or not (selection.enabled(r.name) or r.name in cfg.plugin_sections):
            continue
        section = dict(cfg.plugin_sections.get(r.name, {}))
        try:
            out[r.name] = structure_plugin_config(r.name, r.cls.config_class, section, cfg.origins)
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors(errors)
    return out


def import_ref(ref: str, base_dir: str | Path = ".") -> Any:
    """Resolve ``package.module:attr`` or ``path/to/file.py:attr``."""
    if ":" not in ref:
        raise ConfigError(f"expected 'module:attribute', got {ref!r}")
    mod_name, _, attr = ref.rpartition(":")
    if mod_name.endswith(".py"):
        path = (Path(base_dir) / mod_name).resolve()
        if not path.exists():
            raise ConfigError(f"{ref!r}: file {path} not found")
        key = f"greenroom_user_{abs(hash(str(path)))}"
        module = sys.modules.get(key)
        if module is None:
            spec = importlib.util.spec_from_file_location(key, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[key] = module
            spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise ConfigError(f"{ref!r}: cannot import {mod_name}: {exc}") from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{ref!r}: {mod_name} has no attribute {attr!r}") from None
    return obj


def as_tools(obj: Any, ref: str) -> list[Tool]:
    """A tool, a function, or a list of either -> tools."""
    items = obj if isinstance(obj, list | tuple) else [obj]
    out: list[Tool] = []
    for item in items:
        if isinstance(item, Tool):
            out.append(item)
        elif callable(item):
            out.append(tool(item))
        else:
            raise ConfigError(f"{ref!r}: {item!r} is neither a tool nor a function")
    return out


def base_of(cfg: RuntimeConfig, where: str) -> Path:
    """The folder relative paths at ``where`` resolve against (``RuntimeConfig.dir_of``)."""
    return cfg.dir_of(where)


def build_tools(cfg: RuntimeConfig) -> list[Tool]:
    tools: list[Tool] = []
    for i, ref in enumerate(cfg.tools.python):
        where = f"tools.python[{i}]"
        try:
            tools.extend(as_tools(import_ref(ref, base_of(cfg, where)), ref))
        except ConfigError as exc:
            raise ConfigError(exc.message, file=cfg.origin(where), path=where) from None
        except Exception as exc:
            raise ConfigError(f"{ref!r}: {type(exc).__name__}: {exc}", file=cfg.origin(where), path=where) from None
    for i, cat in enumerate(cfg.tools.catalogs):
        where = f"tools.catalogs[{i}]"
        origin = cfg.origin(where)
        base = Path(origin).parent if origin else Path(cfg.base_dir)
        try:
            tools.extend(load_catalog(base / cat))
        except CatalogError as exc:
            raise ConfigError(str(exc), file=origin, path=where) from None
    return tools


def build_groups(cfg: RuntimeConfig) -> list[ToolGroup]:
    """Groups behind Python loaders (``[[tools.groups]]``)."""
    out: list[ToolGroup] = []
    for i, g in enumerate(cfg.tools.groups):
        where = f"tools.groups[{i}]"
        origin = cfg.origin(where)
        base = Path(origin).parent if origin else Path(cfg.base_dir)
        try:
            func = import_ref(g.loader, base)
            known: list[ToolDescriptor] = []
            if g.catalog:
                known = [t.descriptor for t in load_catalog(base / g.catalog)]
            known_names = {d.name for d in known}
            known += [ToolDescriptor(n, "", group=g.id) for n in g.tools if n not in known_names]
        except (ConfigError, CatalogError) as exc:
            raise ConfigError(str(getattr(exc, "message", exc)), file=origin, path=where) from None
        known = [attrs.evolve(d, group=g.id) for d in known]
        out.append(
            ToolGroup(
                id=g.id,
                name=g.name or g.id,
                description=g.description,
                loader=_loader(func, g.loader),
                known=known,
                defer=g.defer,
            )
        )
    return out


def build_mcp(cfg: RuntimeConfig, reserved_names: Iterable[str]) -> McpToolset | None:
    """The ``[[tools.mcp]]`` servers, prepared: uncached ones listed, eager ones started.

    The caller owns the result and must close it (``aclose``/``close``). Each server runs
    in the folder of the config file that declared it.
    """
    if not cfg.tools.mcp:
        return None
    check_mcp(cfg)
    try:
        from greenroom.mcp import McpToolset
    except ImportError as exc:
        # greenroom.mcp.sdk re-raises the SDK's ImportError with its own advice; quote only the
        # underlying reason (which module is missing), not the advice twice
        reason = exc.__cause__ or exc
        raise ConfigError(
            f"MCP servers need the official MCP SDK (2.x): pip install 'greenroom[mcp]' ({reason})",
            file=cfg.origin("tools.mcp"),
            path="tools.mcp",
        ) from None
    base_dirs: dict[str, str | Path] = {}
    for i, server in enumerate(cfg.tools.mcp):
        origin = cfg.origin(f"tools.mcp[{i}]")
        if origin:
            base_dirs[server.name] = Path(origin).parent
    toolset = McpToolset(cfg.tools.mcp, cfg.base_dir, base_dirs=base_dirs, reserved_names=reserved_names)
    try:
        toolset.prepare_blocking()
    except BaseException:
        toolset.close()
        raise
    return toolset


def _loader(func: Any, ref: str) -> Any:
    async def load() -> list[Tool]:
        value = func()
        if inspect.isawaitable(value):
            value = await value
        return as_tools(value, ref)

    return load


def providers(host: PluginHost) -> dict[str, ProviderFactory]:
    out: dict[str, ProviderFactory] = {}
    for contributed in host.call_sync("greenroom_model_providers"):
        out.update(contributed or {})
    return out


def build_model(spec: str, options: Mapping[str, Any], host: PluginHost, base_dir: str = ".") -> Model:
    prefix, _, rest = spec.partition(":")
    known = providers(host)
    factory = known.get(prefix)
    if factory is None:
        raise ConfigError(
            f"unknown model provider {prefix!r} (available: {', '.join(sorted(known)) or 'none'}); "
            "install the extra that provides it, e.g. pip install 'greenroom[openai]'",
            path="agent.model",
        )
    return factory(rest, {"base_dir": base_dir, **options})


def build_runtime(
    path: str | Path,
    *,
    model: Model | None = None,
    extra_plugins: Iterable[Plugin] = (),
    extra_tools: Iterable[Tool] = (),
    events: EventBus | None = None,
    records: Sequence[PluginRecord] | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> Runtime:
    """Compose a runtime from a config file (``model`` overrides ``agent.model``)."""
    cfg, recs = load_runtime_config(path, records)
    configs = plugin_configs(cfg, recs)
    for name, value in (overrides or {}).items():
        configs[name] = value
    try:
        host = make_plugin_host(
            configs,
            enable=cfg.plugins.enable,
            disable=cfg.plugins.disable,
            records=recs,
            extra=extra_plugins,
            configured=cfg.plugin_sections,
        )
    except PluginStartError as exc:
        names = list(cfg.plugins.enable)
        if exc.plugin in names:  # the config asked for this plugin: point at where
            where = f"plugins.enable[{names.index(exc.plugin)}]"
        elif exc.plugin in cfg.plugin_sections:
            where = f"plugins.{exc.plugin}"
        else:
            raise
        raise ConfigError(str(exc), file=cfg.origin(where) or cfg.files[-1], path=where) from None
    tools = [*build_tools(cfg), *extra_tools]
    groups = build_groups(cfg)
    reserved = [t.descriptor.name for t in tools] + [n for g in groups for n in g.tool_names]
    mcp = build_mcp(cfg, reserved)
    try:
        if mcp is not None:
            tools += mcp.tools()
            groups += mcp.groups()
        built_model = None
        if model is None:
            try:
                model_dir = str(base_of(cfg, "agent.model"))
                model = built_model = build_model(cfg.agent.model, cfg.model, host, model_dir)
            except ConfigError as exc:
                # a provider names the [model] option it rejected; keep that path
                key = exc.path or "agent.model"
                raise ConfigError(exc.message, file=cfg.origin(key) or cfg.files[-1], path=key) from None
        try:
            rt = Runtime(model=model, tools=tools, host=host, agent=cfg.agent, events=events, groups=groups)
        except DuplicateToolError as exc:
            raise ConfigError(str(exc), file=cfg.files[-1], path="tools") from None
    except BaseException:
        # Nobody else holds the toolset yet: without this, a bad model spec would leave
        # the servers listed above running until the process exits.
        if mcp is not None:
            mcp.close()
        raise
    if mcp is not None:
        rt.on_close(mcp.aclose)
    closer = getattr(built_model, "aclose", None)
    if closer is not None:
        rt.on_close(closer)  # the runtime made the model's client, so it closes it too
    rt.config = cfg
    return rt


__all__ = ["FunctionTool", "build_runtime", "import_ref", "load_runtime_config"]
