"""Plugin contract, discovery through entry points, and the plugin-host factory.

Built-in plugins are found exactly like third-party ones: through the entry-point group
``greenroom.plugins``. Discovery works like flake8's plugin finder: list the entry points,
load each in its own try, validate every loaded class (``greenroom.plugins.checks``), and
return one immutable ``PluginRecord`` per plugin, healthy or failed with a ``LoadFailure``.
Which plugins a runtime uses is a ``Selection`` computed from the records and the config;
the host is built by ``make_plugin_host`` and passed in, nothing is created at import time.
"""

from __future__ import annotations

import enum
import functools
import importlib.metadata as md
import logging
import os
from collections.abc import Collection, Iterable, Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar

import attrs
import pluggy

from greenroom import hookspecs
from greenroom.failures import CONTAINED, exception_text
from greenroom.failures import PluginHookError as PluginHookError  # re-exported: it was defined here before
from greenroom.plugins.checks import (
    CORE,
    FailureKind,
    Problem,
    SpecCatalog,
    add_hookspecs,
    check_hooks,
    check_plugin_class,
    claimed_tables,
    spec_catalog,
)
from greenroom.plugins.host import PluginHost, PluginLoadError
from greenroom.plugins.markers import hookimpl as hookimpl
from greenroom.tools.schema.from_types import schema_for_attrs

ENTRY_POINT_GROUP = "greenroom.plugins"
AUTOLOAD_ENV = "GREENROOM_DISABLE_PLUGIN_AUTOLOAD"
log = logging.getLogger("greenroom.plugins")


@functools.cache
def core_catalog() -> SpecCatalog:
    """Core's hooks (``greenroom.hookspecs``), as plugins are checked against them."""
    return spec_catalog(hookspecs, CORE)


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
    config_table: ClassVar[str | None] = None
    """A top-level table that holds this plugin's config instead of ``[plugins.<name>]``
    (``"serve"``: ``[serve]``), for an application of the kernel with a section of its own;
    checked and structured as a plugin section is. Core's own tables cannot be taken."""
    default_enabled: ClassVar[bool] = True
    hookspecs: ClassVar[ModuleType | type | None] = None
    """A module or class of ``@hookspec`` functions: hooks this plugin declares and calls
    (``ctx.call_hook``) and other plugins implement, like pytest's ``pytest_addhooks``."""
    nonblocking: ClassVar[bool] = False
    """Whether every plain (not ``async``) hook of this plugin returns without waiting on
    I/O, locks or sleep. A plain hook called during a run otherwise runs in a worker
    thread, bounded by ``tool_timeout``, so a plugin that blocks stalls only itself; set
    this to skip that hop (a few tens of microseconds a call) when it is true."""

    def __init__(self, config: Any = None) -> None:
        self.config = config if config is not None else self.config_class()

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return schema_for_attrs(cls.config_class)


@attrs.frozen
class LoadFailure:
    """Why a plugin cannot be used: every problem found, the first one first."""

    distribution: str
    entry_point: str
    problems: tuple[Problem, ...] = attrs.field(validator=attrs.validators.min_len(1))

    @property
    def kind(self) -> FailureKind:
        return self.problems[0].kind

    @property
    def message(self) -> str:
        found = "; ".join(str(p) for p in self.problems)
        return f"distribution {self.distribution}, entry point {self.entry_point!r}: {found}"

    def __str__(self) -> str:
        return self.message

    def as_json(self) -> dict[str, Any]:
        return {
            "kind": self.kind.value,
            "hook": self.problems[0].hook,
            "message": self.message,
            "problems": [{"kind": p.kind.value, "hook": p.hook, "detail": p.detail} for p in self.problems],
        }


def _label(distribution: str, version: str) -> str:
    return f"{distribution} {version}".strip()


def _failure_xor_class(record: PluginRecord, _: Any, failure: LoadFailure | None) -> None:
    if (failure is None) == (record.cls is None):
        raise ValueError("a plugin record has either a class (healthy) or a failure, not both or neither")


@attrs.frozen
class PluginRecord:
    """One discovered plugin: where it comes from, and its class or why it failed."""

    name: str
    distribution: str
    version: str
    entry_point: str
    cls: type[Plugin] | None = None
    failure: LoadFailure | None = attrs.field(default=None, validator=_failure_xor_class)

    @property
    def label(self) -> str:
        return _label(self.distribution, self.version)

    def hooks(self) -> list[str]:
        if self.cls is None:
            return []
        return sorted(
            n for n in dir(self.cls) if n.startswith("greenroom_") and hasattr(getattr(self.cls, n), "greenroom_impl")
        )


class PluginStartError(PluginLoadError):
    """A plugin a config asked for that failed to load or to start; ``failure`` says why."""

    def __init__(self, plugin: str, failure: LoadFailure) -> None:
        self.plugin = plugin
        self.failure = failure
        verb = "failed to start" if failure.kind is FailureKind.START else "failed to load"
        super().__init__(f"plugin {plugin!r} {verb}: {failure.message}")


# ------------------------------------------------------------------------ discovery


def _load(ep: md.EntryPoint) -> type[Plugin] | Problem:
    try:
        obj = ep.load()
    except CONTAINED as exc:
        # anything a broken distribution raises while importing, an exit too: it fails itself
        return Problem(FailureKind.IMPORT, f"{type(exc).__name__}: {exception_text(exc)}")
    if isinstance(obj, type) and not issubclass(obj, Plugin):
        return Problem(
            FailureKind.NOT_A_PLUGIN, f"class {obj.__module__}.{obj.__qualname__} does not subclass greenroom.Plugin"
        )
    if not isinstance(obj, type):
        return Problem(
            FailureKind.NOT_A_PLUGIN, f"{ep.value} is a {type(obj).__name__}, not a greenroom.Plugin subclass"
        )
    return obj


def _claimed(name: str, distributions: set[str]) -> Problem:
    """Two distributions name a plugin the same: neither is loaded, rather than one
    picked by install order without a word."""
    names = " and ".join(sorted(distributions))
    return Problem(
        FailureKind.NAME_CLAIMED,
        f"the plugin name {name!r} is claimed by the distributions {names}; uninstall one of them, "
        "or rename its entry point",
    )


def discover(group: str = ENTRY_POINT_GROUP) -> list[PluginRecord]:
    """Find, load and validate every plugin in the entry-point group, each on its own:
    one broken distribution is a failed record, never an exception."""
    seen: dict[str, md.EntryPoint] = {}
    claims: dict[str, set[str]] = {}
    for ep in md.entry_points(group=group):
        seen.setdefault(ep.name, ep)  # one distribution installed twice lists it twice
        dist = getattr(ep, "dist", None)
        claims.setdefault(ep.name, set()).add(dist.name if dist is not None else ep.value)
    loaded = {
        name: _load(seen[name]) if len(claims[name]) == 1 else _claimed(name, claims[name]) for name in sorted(seen)
    }
    # every plugin's own hooks first: a plugin may implement another's, enabled or not
    catalog, refused = catalog_of((name, found) for name, found in loaded.items() if not isinstance(found, Problem))
    records = []
    for name, found in loaded.items():
        ep = seen[name]
        dist = getattr(ep, "dist", None)
        distribution, version = (dist.name, dist.version) if dist is not None else ("?", "")
        entry_point = f"{name} = {ep.value}"
        if isinstance(found, Problem):
            problems = [found]
        else:
            problems = refused.get(found) or check_plugin_class(found, catalog)
            if not problems:
                records.append(PluginRecord(name, distribution, version, entry_point, cls=found))
                continue
        failure = LoadFailure(_label(distribution, version), entry_point, tuple(problems))
        records.append(PluginRecord(name, distribution, version, entry_point, failure=failure))
    return records


def catalog_of(plugins: Iterable[tuple[str, type]]) -> tuple[SpecCatalog, dict[type, list[Problem]]]:
    """The hooks core and ``plugins`` (name, class) declare, and the classes refused, with
    why: their own declarations, or a config table another one claims too."""
    catalog = core_catalog()
    plugins = list(plugins)
    refused = claimed_tables(plugins)
    for name, cls in plugins:
        source = getattr(cls, "hookspecs", None)
        if source is not None:
            catalog, problems = add_hookspecs(catalog, source, name)
            if problems:
                refused.setdefault(cls, []).extend(problems)
    return catalog, refused


# ------------------------------------------------------------------------ selection


def autoload_disabled() -> bool:
    return os.environ.get(AUTOLOAD_ENV, "").strip().lower() not in ("", "0", "false", "no")


class Status(enum.Enum):
    """A plugin's part in one runtime."""

    ENABLED = "enabled"
    OPT_IN = "opt-in"  # installed, off unless ``[plugins] enable`` names it
    DISABLED = "disabled"  # named in ``disable``, or autoload is switched off
    FAILED = "failed"


@attrs.frozen
class Selection:
    """Which discovered plugins one runtime (or command) uses; records never change."""

    status: Mapping[str, Status]

    def enabled(self, name: str) -> bool:
        return self.status.get(name) is Status.ENABLED


def select_enabled(
    records: Iterable[PluginRecord], enable: Collection[str] = (), disable: Collection[str] = ()
) -> Selection:
    """With autoload on, every healthy plugin whose ``default_enabled`` is true is active
    unless disabled; opt-in plugins need ``enable``. With ``GREENROOM_DISABLE_PLUGIN_AUTOLOAD``
    set, only the plugins named in ``enable`` are active. A failed plugin never is."""
    auto = not autoload_disabled()
    status: dict[str, Status] = {}
    for r in records:
        if r.cls is None:
            status[r.name] = Status.FAILED
        elif r.name in disable:
            status[r.name] = Status.DISABLED
        elif r.name in enable or (auto and r.cls.default_enabled):
            status[r.name] = Status.ENABLED
        else:
            status[r.name] = Status.OPT_IN if not r.cls.default_enabled else Status.DISABLED
    return Selection(status)


# ------------------------------------------------------------------------ starting


def start(record: PluginRecord, config: Any = None) -> Plugin:
    """An instance of a healthy plugin; ``PluginStartError`` names it if it raises."""
    if record.cls is None:
        assert record.failure is not None
        raise PluginStartError(record.name, record.failure)
    try:
        return record.cls(config)
    except CONTAINED as exc:
        problem = Problem(FailureKind.START, f"the constructor raised {type(exc).__name__}: {exception_text(exc)}")
        raise PluginStartError(record.name, LoadFailure(record.label, record.entry_point, (problem,))) from exc


def start_failure(record: PluginRecord) -> LoadFailure | None:
    """Why a healthy plugin fails to start with its default config (``greenroom plugins``),
    or None; a config class that needs values cannot be tried without a config."""
    if record.cls is None:
        return record.failure
    try:
        config = record.cls.config_class()
    except Exception:
        return None
    try:
        start(record, config)
    except PluginStartError as exc:
        return exc.failure
    return None


def make_plugin_host(
    configs: Mapping[str, Any] | None = None,
    *,
    enable: Collection[str] = (),
    disable: Collection[str] = (),
    records: Sequence[PluginRecord] | None = None,
    extra: Iterable[Plugin] = (),
    configured: Collection[str] = (),
) -> PluginHost:
    """Build a plugin host: discover, select, start each plugin with its config, register.

    ``configs`` maps plugin names to already-structured config objects (see
    ``greenroom.config``). A plugin named in ``enable`` or ``configured`` (its config
    section was written) that failed to load or start raises ``PluginStartError``; one
    that is only on by default is skipped with a warning, so it never stops a run that
    did not ask for it. ``extra`` registers plugin instances directly (tests and
    embedding applications); they are validated like installed ones.
    """
    recs = list(records) if records is not None else discover()
    extras = list(extra)
    selection = select_enabled(recs, enable, disable)
    asked = (set(enable) | set(configured)) - set(disable)
    for r in recs:
        if r.failure is not None and r.name in asked:
            raise PluginStartError(r.name, r.failure)
    host = PluginHost(recs, hookspecs)
    healthy = [(r.name, r.cls) for r in recs if r.cls is not None]
    for _, cls in healthy:
        if cls.hookspecs is not None:
            host.add_hookspecs(cls.hookspecs)
    if extras:
        _add_extras(host, healthy, extras)
    configs = configs or {}
    for r in recs:
        if not selection.enabled(r.name):
            continue
        try:
            _register(host, r, start(r, configs.get(r.name)))
        except PluginStartError as exc:
            if r.name in asked:
                raise
            log.warning("%s; it is skipped", exc)
    for plugin in extras:
        host.register(plugin, _extra_name(plugin), f"{type(plugin).__module__} (not installed)")
    return host


def _register(host: PluginHost, record: PluginRecord, plugin: Plugin) -> None:
    try:
        host.register(plugin, record.name, record.label)
    except (pluggy.PluginValidationError, PluginLoadError) as exc:
        # only a record built by hand, not by discover(), can get here: still name it
        problem = Problem(FailureKind.BAD_HOOK, " ".join(str(exc).split()))
        raise PluginStartError(record.name, LoadFailure(record.label, record.entry_point, (problem,))) from exc


def _extra_name(plugin: Plugin) -> str:
    return getattr(plugin, "name", "") or type(plugin).__name__


def _add_extras(host: PluginHost, installed: Sequence[tuple[str, type]], extras: Sequence[Plugin]) -> None:
    """Validate plugin instances given directly, then declare their own hooks."""
    types_ = [type(p) for p in extras]
    catalog, refused = catalog_of([*installed, *((_extra_name(p), type(p)) for p in extras)])
    for plugin in extras:
        problems = refused.get(type(plugin)) or check_hooks(plugin, catalog)
        if problems:
            cls = type(plugin)
            entry_point = f"{_extra_name(plugin)} = {cls.__module__}:{cls.__qualname__}"  # as one would read
            failure = LoadFailure(f"{cls.__module__} (not installed)", entry_point, tuple(problems))
            raise PluginStartError(_extra_name(plugin), failure)
    for cls in types_:
        specs = getattr(cls, "hookspecs", None)
        if specs is not None:
            host.add_hookspecs(specs)
