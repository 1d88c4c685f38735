"""What a plugin class must satisfy before it is registered: its own hookspecs, each hook
implementation against the specs, and a config class whose schema can be derived.

pluggy finds some of these problems only at registration (a ``PluginValidationError``
that takes every plugin down with it) and others never (a misspelled hook name is
accepted and never called). Checked when a plugin is loaded, each problem marks just
that plugin failed, as data: a ``Problem`` with a ``FailureKind``.
"""

from __future__ import annotations

import dataclasses
import difflib
import enum
import inspect
import types
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import pluggy

from greenroom.plugins.markers import PROJECT
from greenroom.plugins.offloop import is_async

OBSERVER_HOOK = "greenroom_event"
ASYNC_OBSERVER = (
    "is an 'async def', but events are delivered as they happen, where nothing can wait: "
    "make it a plain 'def' and hand slow work to a queue or a thread"
)
"""Why an ``async def`` observer is refused when its plugin loads."""

IMPL_MARK = f"{PROJECT}_impl"
SPEC_MARK = f"{PROJECT}_spec"
HOOK_PREFIX = f"{PROJECT}_"
CORE = "greenroom"


class FailureKind(enum.Enum):
    """Why a plugin could not be used."""

    IMPORT = "import"  # the entry point could not be loaded
    NOT_A_PLUGIN = "not-a-plugin"  # it loaded, but is not a greenroom.Plugin subclass
    BAD_HOOKSPECS = "bad-hookspecs"  # the hooks it declares itself are unusable
    UNKNOWN_HOOK = "unknown-hook"  # implements a hook no spec declares
    BAD_HOOK = "bad-hook"  # an argument the spec lacks, or wrapper options pluggy rejects
    UNMARKED_HOOK = "unmarked-hook"  # named like a hook, but without @hookimpl
    BAD_CONFIG_CLASS = "bad-config-class"  # not attrs, or its schema cannot be derived
    START = "start"  # the constructor raised
    NAME_CLAIMED = "name-claimed"  # another distribution names a plugin the same


@attrs.frozen
class Problem:
    """One thing wrong with a plugin; ``hook`` names the hook it concerns, if any."""

    kind: FailureKind
    detail: str
    hook: str | None = None

    def __str__(self) -> str:
        return f"hook {self.hook}: {self.detail}" if self.hook else self.detail


@attrs.frozen
class HookSpec:
    """What an implementation of one hook may ask for."""

    name: str
    args: tuple[str, ...]
    historic: bool
    owner: str  # "greenroom" for core hooks, else the plugin that declared it
    source: Any = attrs.field(eq=False, repr=False)  # the module or class that declared it


@attrs.frozen
class SpecCatalog:
    """Every hook a plugin may implement: core's and those plugins declare."""

    specs: Mapping[str, HookSpec] = attrs.field(factory=dict)

    def suggest(self, name: str) -> str:
        # compared without the shared prefix, which would make every name look alike
        stems = {n.removeprefix(HOOK_PREFIX): n for n in self.specs}
        close = difflib.get_close_matches(name.removeprefix(HOOK_PREFIX), list(stems), n=1, cutoff=0.6)
        return f" (did you mean {stems[close[0]]}?)" if close else ""


def _parse_specs(source: types.ModuleType | type, owner: str) -> dict[str, HookSpec]:
    """The hooks a module or class declares, read by pluggy itself so the argument names
    are exactly those it will verify."""
    pm = pluggy.PluginManager(PROJECT)
    pm.add_hookspecs(source)
    out: dict[str, HookSpec] = {}
    for name, caller in vars(pm.hook).items():
        spec = getattr(caller, "spec", None)
        if isinstance(caller, pluggy.HookCaller) and spec is not None:
            out[name] = HookSpec(
                name=name,
                args=(*spec.argnames, *spec.kwargnames),
                historic=bool(spec.opts.get("historic")),
                owner=owner,
                source=source,
            )
    return out


def spec_catalog(source: types.ModuleType | type, owner: str) -> SpecCatalog:
    """The hooks ``source`` declares, as a catalog (core's: ``discovery.core_catalog``)."""
    return SpecCatalog(_parse_specs(source, owner))


def add_hookspecs(catalog: SpecCatalog, source: Any, owner: str) -> tuple[SpecCatalog, list[Problem]]:
    """The catalog with ``owner``'s own hooks added, or unchanged with the problems that
    keep them out (so one plugin's bad specs never reach the host)."""
    if not isinstance(source, types.ModuleType | type):
        return catalog, [Problem(FailureKind.BAD_HOOKSPECS, f"hookspecs must be a module or a class, got {source!r}")]
    try:
        found = _parse_specs(source, owner)
    except Exception as exc:  # pluggy raises ValueError for a source without any @hookspec
        return catalog, [Problem(FailureKind.BAD_HOOKSPECS, f"hookspecs {_qualname(source)}: {exc}")]
    # two plugins of one distribution may share a hookspecs module: that is no conflict
    problems = [
        Problem(FailureKind.BAD_HOOKSPECS, f"already declared by {catalog.specs[name].owner}", hook=name)
        for name in sorted(found)
        if name in catalog.specs and catalog.specs[name].source is not source
    ]
    if problems:
        return catalog, problems
    return SpecCatalog({**catalog.specs, **found}), []


# ------------------------------------------------------------------------ hooks


def _hookable(target: object, attr: str) -> tuple[Any, Any, int] | None:
    """``(marker holder, function, leading arguments pluggy binds)`` for a routine, read
    without running properties or other descriptors (as pluggy does)."""
    if not isinstance(target, type):
        own = getattr(target, "__dict__", {}).get(attr)
        if isinstance(own, types.MethodType):
            return own.__func__, own.__func__, 1
        if inspect.isfunction(own):
            return own, own, 0
    static = inspect.getattr_static(target, attr, None)
    if isinstance(static, staticmethod):
        return static, static.__func__, 0
    if isinstance(static, classmethod):
        return static, static.__func__, 1
    if isinstance(static, types.MethodType):
        return static.__func__, static.__func__, 1
    if inspect.isfunction(static):
        return static, static, 1
    return None


def _routine_names(target: object) -> list[str]:
    """The names ``dir(target)`` would list that can hold a hook, read from the class
    dictionaries: far cheaper than ``dir`` and a static lookup of every attribute."""
    names = set() if isinstance(target, type) else set(getattr(target, "__dict__", {}))
    for klass in (target if isinstance(target, type) else type(target)).__mro__:
        if klass is not object:
            names.update(n for n, v in vars(klass).items() if isinstance(v, _ROUTINES) and not n.startswith("__"))
    return sorted(names)


_ROUTINES = (types.FunctionType, staticmethod, classmethod, types.MethodType)


def _marker(holder: Any, func: Any, mark: str) -> dict[str, Any] | None:
    opts = getattr(holder, mark, None)
    if opts is None:
        opts = getattr(func, mark, None)
    return opts if isinstance(opts, dict) else None


def check_hooks(target: object, catalog: SpecCatalog) -> list[Problem]:
    """Every hook implementation of a plugin class (or instance) against ``catalog``."""
    problems: list[Problem] = []
    for attr in _routine_names(target):
        found = _hookable(target, attr)
        if found is None:
            continue
        holder, func, bound = found
        opts = _marker(holder, func, IMPL_MARK)
        if opts is None:
            if attr.startswith(HOOK_PREFIX):
                problems.append(_unmarked(attr, holder, func, catalog))
            continue
        name = opts.get("specname") or attr
        spec = catalog.specs.get(name)
        if spec is None:
            if not opts.get("optionalhook"):
                detail = f"no such hook is declared{catalog.suggest(name)}"
                problems.append(Problem(FailureKind.UNKNOWN_HOOK, detail, hook=name))
            continue
        problems += [Problem(FailureKind.BAD_HOOK, d, hook=name) for d in _impl_problems(func, bound, opts, spec)]
    return problems


def _unmarked(attr: str, holder: Any, func: Any, catalog: SpecCatalog) -> Problem:
    if _marker(holder, func, SPEC_MARK) is not None:
        detail = "is decorated with @hookspec; an implementation needs @hookimpl"
    elif attr in catalog.specs:
        detail = "has no @hookimpl, so it would never be called"
    else:
        detail = f"is named like a hook but has no @hookimpl, and no such hook is declared{catalog.suggest(attr)}"
    return Problem(FailureKind.UNMARKED_HOOK, detail, hook=attr)


def _impl_problems(func: Any, bound: int, opts: Mapping[str, Any], spec: HookSpec) -> list[str]:
    out: list[str] = []
    try:
        params = list(inspect.signature(func).parameters.values())[bound:]
    except (TypeError, ValueError):  # no signature to read (a builtin): pluggy cannot read it either
        params = []
    passes = ", ".join(spec.args) or "nothing"
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            continue
        if p.name not in spec.args:
            close = difflib.get_close_matches(p.name, spec.args, n=1, cutoff=0.6)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            out.append(f"argument {p.name!r} is not one the hook passes (it passes: {passes}){hint}")
        elif p.kind is p.KEYWORD_ONLY:
            out.append(f"argument {p.name!r} is keyword-only, but hook arguments are passed by position")
    wrapper, old_style = bool(opts.get("wrapper")), bool(opts.get("hookwrapper"))
    if wrapper and old_style:
        out.append("wrapper=True and hookwrapper=True are mutually exclusive")
    elif wrapper or old_style:
        option = "wrapper=True" if wrapper else "hookwrapper=True"
        if spec.historic:
            out.append(f"{option}: a historic hook cannot be wrapped")
        if inspect.isasyncgenfunction(func):
            out.append(f"{option} needs a plain generator function (one yield); an async generator cannot wrap")
        elif not inspect.isgeneratorfunction(func):
            out.append(f"{option} needs a generator function (one yield)")
    elif spec.name == OBSERVER_HOOK and is_async(func):
        out.append(ASYNC_OBSERVER)
    if opts.get("tryfirst") and opts.get("trylast"):
        out.append("tryfirst=True and trylast=True contradict each other")
    return out


# ------------------------------------------------------------------------ config class


def check_config_class(plugin_cls: type) -> list[Problem]:
    """The config class is attrs, and ``config_schema()`` derives a schema from it (config
    loading and ``config schema`` would otherwise fail for every plugin)."""
    config_class = getattr(plugin_cls, "config_class", None)
    if not (isinstance(config_class, type) and attrs.has(config_class)):
        what = "a dataclass" if dataclasses.is_dataclass(config_class) else f"{config_class!r}"
        name = _qualname(config_class) if isinstance(config_class, type) else "config_class"
        detail = f"config class {name} is {what}, not an attrs class (declare it with @attrs.frozen)"
        return [Problem(FailureKind.BAD_CONFIG_CLASS, detail)]
    try:
        schema = plugin_cls.config_schema()  # type: ignore[attr-defined]
    except Exception as exc:
        return [Problem(FailureKind.BAD_CONFIG_CLASS, f"config_schema() raised {type(exc).__name__}: {exc}")]
    if not isinstance(schema, Mapping):
        return [Problem(FailureKind.BAD_CONFIG_CLASS, f"config_schema() returned {type(schema).__name__}, not a table")]
    # not checked against the JSON Schema meta-schema: that costs ~2 ms a plugin at every
    # start of the CLI, and a bad schema only affects configs that set the plugin's section
    table = getattr(plugin_cls, "config_table", None)
    if table is None:
        return []
    from greenroom.config.model import CORE_TABLES  # only for the few plugins that own a table

    if not isinstance(table, str) or not table.replace("-", "_").isidentifier() or table in CORE_TABLES:
        detail = f"config_table {table!r} is not a table of its own (a name, not one of {', '.join(CORE_TABLES)})"
        return [Problem(FailureKind.BAD_CONFIG_CLASS, detail)]
    return []


def claimed_tables(plugins: Iterable[tuple[str, type]]) -> dict[type, list[Problem]]:
    """The plugin classes (by name) that claim a ``config_table`` another one claims too:
    neither takes it, rather than one picked by name order."""
    claims: dict[str, list[tuple[str, type]]] = {}
    for name, cls in plugins:
        table = getattr(cls, "config_table", None)
        if isinstance(table, str):
            claims.setdefault(table, []).append((name, cls))
    out: dict[type, list[Problem]] = {}
    for table, owners in claims.items():
        if len(owners) > 1:
            said = f"the config table [{table}] is claimed by the plugins {' and '.join(n for n, _ in owners)}"
            for _, cls in owners:
                out.setdefault(cls, []).append(Problem(FailureKind.BAD_CONFIG_CLASS, said))
    return out


def check_plugin_class(plugin_cls: type, catalog: SpecCatalog) -> list[Problem]:
    """Everything checkable without an instance; an unexpected error while checking one
    part is that part's problem, never an exception out of discovery."""
    problems: list[Problem] = []
    for kind, check in (
        (FailureKind.BAD_HOOK, lambda: check_hooks(plugin_cls, catalog)),
        (FailureKind.BAD_CONFIG_CLASS, lambda: check_config_class(plugin_cls)),
    ):
        try:
            problems += check()
        except Exception as exc:
            problems.append(Problem(kind, f"could not be checked: {type(exc).__name__}: {exc}"))
    return problems


def _qualname(obj: Any) -> str:
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', getattr(obj, '__name__', obj))}"
