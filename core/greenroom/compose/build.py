"""Build a runtime from a config file: plugins, their configs, tools and the model.

``greenroom run`` and ``greenroom config check`` share this build: a check passes a
``Findings``, so nothing starts and every problem is recorded (``greenroom.compose.check``).
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, TypeVar

import attrs

from greenroom.compose.findings import Findings, Level
from greenroom.compose.sources import as_tools, build_groups, build_mcp, build_tools, import_ref
from greenroom.config import ConfigError, ConfigErrors, RuntimeConfig, load_config, structure_plugin_config
from greenroom.config.errors import UnsetVariableError
from greenroom.config.loading import interpolate
from greenroom.events import EventBus
from greenroom.mcp.checks import check_mcp
from greenroom.models import Model, ModelError, ModelRequest, ModelResponse, ProviderFactory
from greenroom.plugins.discovery import (
    Plugin,
    PluginHost,
    PluginRecord,
    PluginStartError,
    discover,
    make_plugin_host,
    select_enabled,
    start,
)
from greenroom.providers.errors import MissingExtraError, ProviderSetupError
from greenroom.run.runtime import Runtime
from greenroom.tools import FunctionTool, Tool
from greenroom.tools.groups import ToolGroup
from greenroom.tools.toolset import DuplicateToolError

log = logging.getLogger("greenroom.compose")

T = TypeVar("T")


def plugin_schemas(records: Iterable[PluginRecord]) -> dict[str, dict[str, Any]]:
    return {r.name: _section_schema(r.name, r.cls) for r in records if r.cls is not None}


def _section_schema(name: str, cls: type[Plugin]) -> dict[str, Any]:
    """What ``[plugins.NAME]`` may hold: the plugin's config, unless it owns a table."""
    if not cls.config_table:
        return cls.config_schema()
    said = f"plugin {name!r} reads its config from [{cls.config_table}], not from [plugins.{name}]"
    return {"type": "object", "maxProperties": 0, "errorMessage": said}


def plugin_tables(records: Iterable[PluginRecord]) -> dict[str, dict[str, Any]]:
    """The top-level tables healthy plugins own (``Plugin.config_table``), with their schemas."""
    return {r.cls.config_table: r.cls.config_schema() for r in records if r.cls is not None and r.cls.config_table}


def load_runtime_config(
    path: str | Path, records: Sequence[PluginRecord] | None = None
) -> tuple[RuntimeConfig, list[PluginRecord]]:
    recs = list(records) if records is not None else discover()
    broken = {r.name: r.failure.message for r in recs if r.failure is not None}
    tables = plugin_tables(recs)
    cfg = load_config(path, plugin_schemas=plugin_schemas(recs), broken_plugins=broken, plugin_tables=tables)
    if "api_key" in cfg.model:
        # a key in a file ends up in version control (and in `config show`); never quote it
        raise ConfigError(
            "API keys are never read from config files: remove this key, put the key in an "
            'environment variable, and name that variable with api_key_env = "NAME" '
            "(each provider has a default, e.g. OPENAI_API_KEY)",
            file=cfg.origin("model.api_key"),
            path="model.api_key",
        )
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
        if r.cls is None:
            continue
        table = r.cls.config_table
        if not (selection.enabled(r.name) or (table in cfg.tables if table else r.name in cfg.plugin_sections)):
            continue
        try:
            out[r.name] = plugin_config(r.cls, cfg, r.name)
        except ConfigErrors as exc:
            errors.extend(exc.errors)
        except ConfigError as exc:
            errors.append(exc)
    if errors:
        raise ConfigErrors(errors)
    return out


def plugin_config(plugin: type[Plugin], cfg: RuntimeConfig, name: str | None = None) -> Any:
    """A plugin's config as a loaded file sets it (``load_runtime_config``): its section,
    ``[plugins.NAME]`` or the table it owns (``Plugin.config_table``), structured into its
    ``config_class``, the defaults where the file says nothing. A bad value is a
    ``ConfigError`` (``ConfigErrors``) naming the file and the dotted key. ``name`` is its
    entry-point name (default: the class's ``name``)."""
    name = name or plugin.name
    table = plugin.config_table
    section = cfg.tables.get(table, {}) if table else cfg.plugin_sections.get(name, {})
    return structure_plugin_config(name, plugin.config_class, section, cfg.origins, table=table)


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
            f"{_provider_hint(prefix, host)}",
            path="agent.model",
        )
    return factory(rest, {"base_dir": base_dir, **options})


def _provider_hint(prefix: str, host: PluginHost) -> str:
    """What makes ``prefix`` known: enabling the installed plugin that provides it (off
    because autoload is off, or it is opt-in or disabled), else installing one."""
    for r in discover():
        if r.cls is None or host.pm.get_plugin(r.name) is not None:
            continue
        if "greenroom_model_providers" not in r.hooks():
            continue
        try:  # asked with its default config: the config at hand did not enable it
            provided = start(r, r.cls.config_class()).greenroom_model_providers()  # type: ignore[attr-defined]
        except Exception:
            continue
        if prefix in (provided or {}):
            return f'the installed plugin {r.name!r} provides it but is not enabled: [plugins] enable = ["{r.name}"]'
    return "install the extra that provides it, e.g. pip install 'greenroom[openai]'"


class UnbuiltModel:
    """Stands in, during a config check, for a model this machine cannot build (its
    provider's extra is missing), so the rest of the runtime is still checked."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def complete(self, request: ModelRequest) -> ModelResponse:
        raise ModelError(self.reason)


def model_from_config(
    cfg: RuntimeConfig, host: PluginHost, check: Findings | None = None, *, offline: bool = False
) -> Model:
    """``agent.model`` built with ``[model]``, offline: a provider connects at its first call.

    Every failure names the file and the key (a provider names the ``[model]`` option it
    rejected). For a check, what this machine lacks (the provider's extra, the API key) is
    a warning: the file is fine. ``offline`` (``greenroom inspect``): a missing extra gives
    an ``UnbuiltModel`` too, since nothing will call the model.
    """
    key = "agent.model"
    try:
        options = interpolate(cfg.model, cfg.origins, "model")
    except UnsetVariableError as exc:
        # a server of MCP clients or an inspection never calls the model; a run does, and stops here
        where = exc.file or cfg.origin(exc.path) or cfg.files[-1]
        if offline:
            log.warning("%s: %s: %s (the model is not used here)", where, exc.path, exc.message)
            return UnbuiltModel(f"{exc.path}: {exc.message}")
        if check is None:
            raise
        check.add(Level.WARNING, f"run needs it: {exc.message} (serve does not)", file=where, path=exc.path)
        return UnbuiltModel(f"{exc.path}: {exc.message}")
    try:
        model = build_model(cfg.agent.model, options, host, str(cfg.dir_of(key)))
    except ConfigError as exc:
        key = exc.path or key
        raise ConfigError(exc.message, file=cfg.origin(key) or cfg.files[-1], path=key) from None
    except MissingExtraError as exc:
        if offline:
            return UnbuiltModel(str(exc))
        if check is None:
            raise ConfigError(str(exc), file=cfg.origin(key) or cfg.files[-1], path=key) from None
        check.add(Level.WARNING, f"run needs it here: {exc}", file=cfg.origin(key) or cfg.files[-1], path=key)
        return UnbuiltModel(str(exc))
    except Exception as exc:  # a provider's own error (a script file that is missing...)
        message = str(exc) if isinstance(exc, ModelError) else f"{type(exc).__name__}: {exc}"
        raise ConfigError(message, file=cfg.origin(key) or cfg.files[-1], path=key) from None
    ready = getattr(model, "check_ready", None)
    if check is not None and ready is not None:
        try:
            ready()
        except ProviderSetupError as exc:
            check.add(Level.WARNING, f"run needs it here: {exc}", file=cfg.origin(key) or cfg.files[-1], path=key)
    return model


def plugin_host(
    cfg: RuntimeConfig, recs: Sequence[PluginRecord], configs: Mapping[str, Any], extra: Iterable[Plugin]
) -> PluginHost:
    """The host of the plugins the config enables; a plugin it asked for that fails to
    start is an error at the key that asked for it."""
    try:
        return make_plugin_host(
            configs,
            enable=cfg.plugins.enable,
            disable=cfg.plugins.disable,
            records=recs,
            extra=extra,
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


def _enabled(cfg: RuntimeConfig, recs: Sequence[PluginRecord], names: Sequence[str]) -> RuntimeConfig:
    """``cfg`` with ``names`` added to ``[plugins] enable``; a name no installed plugin has
    is an error naming the installed ones."""
    installed = {r.name for r in recs}
    for name in names:
        if name not in installed:
            raise ConfigError(
                f"no installed plugin named {name!r} to enable (installed: {', '.join(sorted(installed))})"
            )
    more = tuple(n for n in dict.fromkeys(names) if n not in cfg.plugins.enable)
    return attrs.evolve(cfg, plugins=attrs.evolve(cfg.plugins, enable=(*cfg.plugins.enable, *more)))


def _stage(check: Findings | None, fallback: T, build: Callable[[], T]) -> T:
    """A build stage: a run stops at its first error; a check records it and goes on
    with ``fallback``, so one check reports every stage's errors."""
    if check is None:
        return build()
    try:
        return build()
    except ConfigError as exc:
        check.add_config_error(exc)
        return fallback


def build_runtime(
    path: str | Path,
    *,
    model: Model | None = None,
    extra_plugins: Iterable[Plugin] = (),
    extra_tools: Iterable[Tool] = (),
    events: EventBus | None = None,
    records: Sequence[PluginRecord] | None = None,
    overrides: Mapping[str, Any] | None = None,
    check: Findings | None = None,
    offline_model: bool = False,
    prepare_mcp: bool = True,
    enable: Sequence[str] = (),
) -> Runtime:
    """Compose a runtime from a config file (``model`` overrides ``agent.model``).

    ``enable`` turns on more installed plugins, as if ``[plugins] enable`` named them too
    (``greenroom serve --enable``); a plugin the file disables stays off.

    ``offline_model``: the runtime will not call its model (``greenroom inspect``), so a
    provider whose SDK is not installed is no error.

    ``prepare_mcp=False``: the MCP servers are neither listed nor started here; the runtime
    starts with their cached listings and the caller prepares them
    (``runtime.mcp.prepare(late=True)``, then ``runtime.follow_listings()``): ``greenroom serve``,
    which answers its clients meanwhile.

    ``check`` makes it the build of ``greenroom config check``: the same steps, but no
    MCP server starts (unless ``check.connect``), and problems are recorded there, the
    config's errors among them, as far as the build can go on without the part that
    failed. Errors that leave nothing to build on (the file itself) are still raised.
    """
    cfg, recs = load_runtime_config(path, records)
    if enable:
        cfg = _enabled(cfg, recs, enable)
    configs = plugin_configs(cfg, recs)
    for name, value in (overrides or {}).items():
        configs[name] = value
    host = plugin_host(cfg, recs, configs, extra_plugins)
    no_tools: list[Tool] = []
    no_groups: list[ToolGroup] = []
    tools = [*_stage(check, no_tools, lambda: build_tools(cfg, check)), *extra_tools]
    groups = _stage(check, no_groups, lambda: build_groups(cfg, check))
    reserved = [t.descriptor.name for t in tools] + [n for g in groups for n in g.tool_names]
    mcp = build_mcp(cfg, reserved, check, prepare=prepare_mcp)
    try:
        if mcp is not None:
            tools += mcp.tools()
            groups += mcp.groups()
        built_model = None
        if model is None:
            unbuilt: Model = UnbuiltModel("the model could not be built")
            model = built_model = _stage(
                check, unbuilt, lambda: model_from_config(cfg, host, check, offline=offline_model)
            )
        try:
            rt = Runtime(
                model=model,
                tools=tools,
                host=host,
                agent=cfg.agent,
                events=events,
                groups=groups,
                policy=cfg.tools.policy,
                config=cfg,
                mcp=mcp,
            )
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
    return rt


async def abuild_runtime(path: str | Path, **options: Any) -> Runtime:
    """``build_runtime`` for async code: the build (reading the config, importing tools,
    starting and listing MCP servers) runs in a worker thread, so the caller's event loop
    keeps running meanwhile; MCP servers run on the runtime's own background loop either
    way. Takes the same keyword arguments."""
    import anyio.to_thread

    from greenroom.mcp.host import termination

    termination.install()  # signal handlers can only be set from the main thread: here, not there
    return await anyio.to_thread.run_sync(functools.partial(build_runtime, path, **options))


__all__ = [
    "FunctionTool",
    "UnbuiltModel",
    "abuild_runtime",
    "as_tools",
    "build_model",
    "build_runtime",
    "import_ref",
    "load_runtime_config",
    "model_from_config",
    "plugin_configs",
    "plugin_host",
]
