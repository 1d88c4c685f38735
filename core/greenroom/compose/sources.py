"""The tool sources a config names: Python references, catalogs, groups and MCP servers.

Each builder turns one part of ``[tools]`` into tools or groups, and every problem into a
``ConfigError`` at the dotted key that named the source (``tools.catalogs[1]``). A
``Findings`` given to a builder means a config check: tools' schemas are checked too, and
MCP servers are not started unless the check connects (their cached listings are read).
"""

from __future__ import annotations

import importlib
import importlib.util
import inspect
import logging
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from greenroom.compose.findings import Findings, Level
from greenroom.config import ConfigError, ConfigErrors, RuntimeConfig
from greenroom.mcp.checks import check_mcp
from greenroom.tools import Tool, ToolDescriptor, tool
from greenroom.tools.catalog import CatalogError, load_catalog, schema_origin
from greenroom.tools.groups import ToolGroup
from greenroom.tools.schema.check import catalog_problems, full_problem
from greenroom.tools.schema.problem import SchemaProblem

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from greenroom.mcp import McpToolset
    from greenroom.mcp.listing import McpListing


def import_ref(ref: str, base_dir: str | Path = ".") -> Any:
    """Resolve ``package.module:attr`` or ``path/to/file.py:attr``.

    A module that calls ``sys.exit`` while it is imported is a ``ConfigError`` naming the
    reference, not the end of the process (which would exit quietly, often with status 0)."""
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
            try:
                spec.loader.exec_module(module)
            except BaseException as exc:
                del sys.modules[key]  # a half-run module must not be found next time
                if isinstance(exc, SystemExit):
                    raise _exited(ref, mod_name, exc) from None
                raise
    else:
        try:
            module = importlib.import_module(mod_name)
        except ImportError as exc:
            raise ConfigError(f"{ref!r}: cannot import {mod_name}: {exc}") from None
        except SystemExit as exc:
            raise _exited(ref, mod_name, exc) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"{ref!r}: {mod_name} has no attribute {attr!r}") from None
    return obj


def _exited(ref: str, module: str, exc: SystemExit) -> ConfigError:
    status = "" if exc.code is None else repr(exc.code)
    return ConfigError(f"{ref!r}: importing {module} called sys.exit({status}); a tool module must not exit")


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


def _at(cfg: RuntimeConfig, where: str, exc: BaseException, ref: str) -> ConfigError:
    """``exc`` as a config error at ``where`` (a user's module may raise anything)."""
    if isinstance(exc, ConfigError):
        message = exc.message
    elif isinstance(exc, CatalogError):
        message = str(exc)
    else:
        message = f"{ref!r}: {type(exc).__name__}: {exc}"
    return ConfigError(message, file=cfg.origin(where), path=where)


def schema_problems(schema: Any) -> list[SchemaProblem]:
    """What makes ``schema`` unusable: what a run finds when the tool loads, and else
    what the dialect's meta-schema rejects (a run finds that at the tool's first call).
    A catalog's schemas are checked all at once, and kept under its digest."""
    origin = schema_origin(schema)
    found = catalog_problems(origin[0], full=True).get(origin[1]) if origin is not None else full_problem(schema)
    return [found] if found is not None else []


def check_schemas(
    descriptors: Iterable[ToolDescriptor],
    check: Findings,
    level: Level,
    *,
    file: str | None,
    path: str,
    whose: str = "",
) -> None:
    """Record each descriptor whose parameters schema is not a valid JSON Schema."""
    for d in descriptors:
        for problem in [d.problem] if d.problem else schema_problems(d.parameters):
            check.add(
                level, f"{whose}tool {d.name!r} has an invalid parameters schema: {problem}", file=file, path=path
            )


def build_tools(cfg: RuntimeConfig, check: Findings | None = None) -> list[Tool]:
    """The tools of ``[tools] python`` and ``[tools] catalogs``; every bad source is
    reported at once, as ``ConfigErrors``."""
    tools: list[Tool] = []
    errors: list[ConfigError] = []
    sources = [(f"tools.python[{i}]", ref, True) for i, ref in enumerate(cfg.tools.python)]
    sources += [(f"tools.catalogs[{i}]", cat, False) for i, cat in enumerate(cfg.tools.catalogs)]
    for where, ref, python in sources:
        try:
            if python:
                found = as_tools(import_ref(ref, cfg.dir_of(where)), ref)
            else:
                found = list(load_catalog(cfg.dir_of(where) / ref))
        except Exception as exc:
            errors.append(_at(cfg, where, exc, ref))
            continue
        if check is not None:
            check_schemas((t.descriptor for t in found), check, Level.ERROR, file=cfg.origin(where), path=where)
        tools.extend(found)
    if errors:
        raise ConfigErrors(errors)
    return tools


def build_groups(cfg: RuntimeConfig, check: Findings | None = None) -> list[ToolGroup]:
    """Groups behind Python loaders (``[[tools.groups]]``) and the local skills
    (``[skills] folders``); every bad group at once."""
    out: list[ToolGroup] = []
    errors: list[ConfigError] = []
    for i, g in enumerate(cfg.tools.groups):
        where = f"tools.groups[{i}]"
        base = cfg.dir_of(where)
        try:
            func = import_ref(g.loader, base)
            known: list[ToolDescriptor] = []
            if g.catalog:
                known = [t.descriptor for t in load_catalog(base / g.catalog)]
        except Exception as exc:
            errors.append(_at(cfg, where, exc, g.loader))
            continue
        if check is not None:
            check_schemas(known, check, Level.ERROR, file=cfg.origin(where), path=where)
        known_names = {d.name for d in known}
        known += [ToolDescriptor(n, "", group=g.id) for n in g.tools if n not in known_names]
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
    if cfg.skills.folders:
        out.append(_local_skills(cfg, errors, check))
    if errors:
        raise ConfigErrors(errors)
    return out


def _local_skills(cfg: RuntimeConfig, errors: list[ConfigError], check: Findings | None) -> ToolGroup:
    """The skills group of ``[skills] folders`` (``greenroom.skills.folder``); each folder
    that is not one is an error, each skill left out a warning of the check."""
    from greenroom.skills.folder import LOCAL_GROUP, FolderSkills
    from greenroom.skills.tool import skill_group

    folders = []
    for i, folder in enumerate(cfg.skills.folders):
        where = f"skills.folders[{i}]"
        path = cfg.dir_of(where) / folder
        if path.is_dir():
            folders.append(path)
        else:
            errors.append(ConfigError(f"{path} is not a folder of skills", file=cfg.origin(where), path=where))
    skills = FolderSkills(folders)
    for problem in skills.problems:
        if check is not None:
            check.add(Level.WARNING, problem, file=cfg.origin("skills.folders"), path="skills.folders")
        else:
            log.warning("%s", problem)
    return skill_group(skills, LOCAL_GROUP, "local skills")


def _loader(func: Any, ref: str) -> Any:
    async def load() -> list[Tool]:
        value = func()
        if inspect.isawaitable(value):
            value = await value
        return as_tools(value, ref)

    return load


def build_mcp(
    cfg: RuntimeConfig, reserved_names: Iterable[str], check: Findings | None = None, *, prepare: bool = True
) -> McpToolset | None:
    """The ``[[tools.mcp]]`` servers, prepared: uncached ones listed, eager ones started
    (unless not ``prepare``: then the caller prepares them, ``McpToolset.prepare(late=True)``).

    For a check nothing starts (cached listings are read, and a server without one is a
    note), unless it connects: then every server is started and listed. The caller owns
    the result and must close it (``aclose``/``close``). Each server runs in the folder
    of the config file that declared it.
    """
    if not cfg.tools.mcp:
        return None
    check_mcp(cfg)
    dirs = [cfg.dir_of(f"tools.mcp[{i}]") for i in range(len(cfg.tools.mcp))]
    try:
        from greenroom.mcp import McpToolset
    except ImportError as exc:
        from greenroom.mcp.errors import sdk_missing

        message = f"MCP servers: {sdk_missing(exc)}"
        if check is None or check.connect:
            raise ConfigError(message, file=cfg.origin("tools.mcp"), path="tools.mcp") from None
        # the caches need no SDK: a config is checked where the extra is not installed
        check.add(Level.WARNING, f"run needs it here: {message}", file=cfg.origin("tools.mcp"), path="tools.mcp")
        _check_listings(cfg, check, [_cached(cfg, i, d) for i, d in enumerate(dirs)])
        return None
    base_dirs = {server.name: d for server, d in zip(cfg.tools.mcp, dirs, strict=True)}
    toolset = McpToolset(
        cfg.tools.mcp, cfg.base_dir, base_dirs=base_dirs, reserved_names=reserved_names, policy=cfg.tools.policy
    )
    try:
        if check is None:
            if prepare:
                toolset.prepare_blocking()
        elif check.connect:
            _start_every_server(cfg, toolset, check)
        else:
            _check_listings(cfg, check, [toolset.servers[s.name].listing for s in cfg.tools.mcp])
    except BaseException:
        toolset.close()
        raise
    return toolset


def _cached(cfg: RuntimeConfig, index: int, base_dir: Path) -> McpListing | None:
    from greenroom.mcp.cache import read_cached_listing

    return read_cached_listing(cfg.tools.mcp[index], base_dir)


def _check_listings(cfg: RuntimeConfig, check: Findings, listings: Sequence[McpListing | None]) -> None:
    for i, listing in enumerate(listings):
        _check_listing(cfg, check, i, listing)


def _check_listing(cfg: RuntimeConfig, check: Findings, index: int, listing: McpListing | None) -> None:
    """A note for a server without a cached listing; a warning per broken listed schema
    (the server's to fix, not the config's)."""
    server, where = cfg.tools.mcp[index], f"tools.mcp[{index}]"
    if listing is None:
        message = f"server {server.name!r} has no cached listing yet: it will be started at first use"
        check.add(Level.NOTE, message, file=cfg.origin(where), path=where)
        return
    listed = [
        ToolDescriptor(spec.name, "", parameters=spec.input_schema, problem=spec.problem) for spec in listing.tools
    ]
    whose = f"server {server.name!r}: "
    check_schemas(listed, check, Level.WARNING, file=cfg.origin(where), path=where, whose=whose)


def _start_every_server(cfg: RuntimeConfig, toolset: McpToolset, check: Findings) -> None:
    from greenroom.mcp import McpError

    for i, server in enumerate(cfg.tools.mcp):
        hidden = toolset.excluded(toolset.servers[server.name])
        if hidden is not None:
            message = f"server {server.name!r} is not started: {hidden.describe()} hides every tool it has"
            check.add(Level.NOTE, message, file=cfg.origin(f"tools.mcp[{i}]"), path=f"tools.mcp[{i}]")
            continue
        try:
            listing = toolset.servers[server.name].start_blocking()
        except McpError as exc:
            where = f"tools.mcp[{i}]"
            check.add(Level.UNREACHABLE, str(exc), file=cfg.origin(where), path=where)
            continue
        _check_listing(cfg, check, i, listing)


__all__ = ["as_tools", "build_groups", "build_mcp", "build_tools", "check_schemas", "import_ref"]
