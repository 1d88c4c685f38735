"""The tools of a runtime by name, and checking a call's arguments against them.

Every tool's parameter schema is checked when it joins the set (``schema_check``). A
tool whose schema is invalid is *unusable*: it stays in the set by name, so a call to it
gets its problem as an error result, but it is left out of ``descriptors()``, so no
list the model sees (and no provider request, which would be rejected) carries it.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Any

import jsonschema

from greenroom._support.memo import IdentityMemo
from greenroom.tools import Tool, ToolDescriptor
from greenroom.tools.catalog import CatalogFile, CatalogSchema, schema_origin
from greenroom.tools.schema.check import catalog_problems, compile_validator, meta_schema_problem, schema_problem
from greenroom.tools.schema.fast_validation import FastValidator, compile_fast
from greenroom.tools.schema.problem import SchemaFault, SchemaProblem


class DuplicateToolError(ValueError):
    pass


# Parameter schemas already checked, by identity: runtimes built again over the same tools
# (benchmarks, a server per client) pay for each schema once. Descriptors are frozen; their
# schemas are not changed after they are made. A catalog's schemas are not kept here: their
# problems come, for the whole catalog at once, from the digest cache (``catalog_problems``).
_checked: IdentityMemo[SchemaProblem | None] = IdentityMemo(100_000)


def _load_problem(schema: Any) -> SchemaProblem | None:
    origin = schema_origin(schema)
    if origin is not None:
        return catalog_problems(origin[0]).get(origin[1])
    hit = _checked.lookup((schema,))
    if hit is not None:
        return hit[0]
    # the one judgement config check gives too: a schema the check rejects is never sent
    return _checked.put((schema,), schema_problem(schema))


class _LoadProblems:
    """``_load_problem`` over many tools: a catalog's problems looked up once while
    consecutive tools come from it (``schema_origin`` and the lookup, inline, were most
    of a pass over 100,000 catalog or MCP tools)."""

    def __init__(self) -> None:
        self._catalog: CatalogFile | None = None
        self._known: Mapping[int, SchemaProblem] = {}

    def __call__(self, parameters: Any) -> SchemaProblem | None:
        if type(parameters) is not CatalogSchema:
            return _load_problem(parameters)
        if parameters.catalog is not self._catalog:
            self._catalog = parameters.catalog
            self._known = catalog_problems(parameters.catalog)
        return self._known.get(parameters.index)


class UnusableToolError(ValueError):
    """A call reached a tool whose parameter schema is invalid."""

    def __init__(self, tool: str, problem: SchemaProblem) -> None:
        super().__init__(unusable_message(tool, problem))
        self.tool = tool
        self.problem = problem


UnusableListener = Callable[[str, SchemaProblem], None]
"""Told each time a tool is found unusable: its name and what is wrong."""


class ToolSet(Mapping[str, Tool]):
    """The tools of a runtime by name, with their compiled argument validators.

    ``on_unusable`` hears of every tool found unusable: when it is added, when a
    catalog descriptor is noted (``note_known``), or when its first call finds what
    only the meta-schema check sees.
    """

    def __init__(self, tools: Iterable[Tool] = (), *, on_unusable: UnusableListener | None = None) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._fast: dict[str, FastValidator | None] = {}  # beside each compiled validator
        self._problems: dict[str, SchemaProblem] = {}
        self._descriptors: list[ToolDescriptor] | None = None
        self._on_unusable = on_unusable
        self.version = 0  # bumped on every change, so views built from the set can be reused
        self._add_new(tools)

    def _add_new(self, tools: Iterable[Tool]) -> None:
        """``add`` of each tool into a set that has no validators yet: one pass, each
        catalog's problems looked up once (a runtime of 100,000 catalog tools starts here)."""
        added = self._tools
        problem_of = _LoadProblems()
        for t in tools:
            d = t.descriptor
            name = d.name
            if name in added:
                raise DuplicateToolError(f"two tools are named {name!r}")
            added[name] = t
            problem = d.problem or problem_of(d.parameters)
            if problem is not None:
                self._record(name, problem)
        self._descriptors = None
        self.version += 1

    def add(self, tool: Tool, *, replace: bool = False) -> None:
        name = tool.descriptor.name
        if name in self._tools and not replace:
            raise DuplicateToolError(f"two tools are named {name!r}")
        self._tools[name] = tool
        self._validators.pop(name, None)
        self._fast.pop(name, None)
        self._record(name, tool.descriptor.problem or _load_problem(tool.descriptor.parameters))
        self._descriptors = None
        self.version += 1

    def note_known(self, descriptors: Iterable[ToolDescriptor]) -> None:
        """Check descriptors of tools that are not loaded yet (a group's catalog), so they
        are reported now and a call before the load gets their problem."""
        problem_of = _LoadProblems()
        tools = self._tools
        for d in descriptors:
            if d.name not in tools:
                self._record(d.name, d.problem or problem_of(d.parameters))

    def _record(self, name: str, problem: SchemaProblem | None) -> None:
        if problem is None:
            self._problems.pop(name, None)
            return
        known = self._problems.get(name)
        self._problems[name] = problem
        if known != problem and self._on_unusable is not None:
            self._on_unusable(name, problem)

    def remove(self, name: str) -> None:
        """Take a tool away (its source no longer lists it): it leaves every list, and a
        call to it is a call to an unknown tool."""
        if self._tools.pop(name, None) is None:
            return
        self._validators.pop(name, None)
        self._fast.pop(name, None)
        self._problems.pop(name, None)
        self._descriptors = None
        self.version += 1

    def mark_unusable(self, name: str, problem: SchemaProblem) -> None:
        """Record a problem found only when a call used the schema; the tool leaves every list."""
        self._record(name, problem)
        self._descriptors = None
        self.version += 1

    def problem(self, name: str) -> SchemaProblem | None:
        """Why the tool named ``name`` cannot be used, or None when nothing is known against it."""
        return self._problems.get(name)

    @property
    def unusable(self) -> Mapping[str, SchemaProblem]:
        """Every tool found unusable so far (loaded or only known), with its problem."""
        return MappingProxyType(self._problems)

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def descriptors(self) -> list[ToolDescriptor]:
        """Every usable tool's descriptor, in registration order (a fresh list; built once
        per change)."""
        if self._descriptors is None:
            problems = self._problems
            self._descriptors = [t.descriptor for n, t in self._tools.items() if n not in problems]
        return list(self._descriptors)

    def validator(self, name: str) -> jsonschema.protocols.Validator:
        """The tool's argument validator, compiled on first use (after the meta-schema
        check) and kept; raises ``UnusableToolError`` for a tool with an invalid schema."""
        v = self._validators.get(name)
        if v is None:
            problem = self._problems.get(name)
            if problem is not None:
                raise UnusableToolError(name, problem)
            schema = self._tools[name].descriptor.parameters or {"type": "object"}
            problem = meta_schema_problem(schema)
            if problem is not None:
                self.mark_unusable(name, problem)
                raise UnusableToolError(name, problem)
            v = self._validators[name] = compile_validator(schema)
            self._fast[name] = compile_fast(schema, type(v))
        return v

    def fast_validator(self, name: str) -> FastValidator | None:
        """The tool's fast accept path (``fast_validation``), compiled with its validator;
        None before that or when the schema has none."""
        return self._fast.get(name)


def validation_problems(tools: ToolSet, name: str, args: Mapping[str, Any]) -> list[str]:
    """Every problem with a call's arguments: JSON Schema first, then the tool's own check.

    Arguments the tool's Rust validator accepts are valid; the rest are validated by
    jsonschema, which alone words the problems (``fast_validation``). Raises
    ``UnusableToolError`` when the tool's schema is invalid, including when validating
    with it raises (the tool is then marked unusable)."""
    validator = tools.validator(name)
    fast = tools.fast_validator(name)
    problems = [] if fast is not None and fast.accepts(args) else _schema_problems(tools, name, validator, args)
    tool = tools[name]
    check = getattr(tool, "validate_args", None)
    if not problems and callable(check):
        problems.extend(check(dict(args)) or [])
    return problems


def _schema_problems(
    tools: ToolSet, name: str, validator: jsonschema.protocols.Validator, args: Mapping[str, Any]
) -> list[str]:
    try:
        errors = sorted(validator.iter_errors(dict(args)), key=lambda e: list(map(str, e.path)))
    except Exception as exc:
        problem = SchemaProblem(
            SchemaFault.UNAPPLICABLE,
            "#",
            f"validating arguments with it failed: {type(exc).__name__}: {str(exc)[:300]}",
        )
        tools.mark_unusable(name, problem)
        raise UnusableToolError(name, problem) from None
    problems = []
    for err in errors:
        where = "/".join(str(p) for p in err.absolute_path) or "(arguments)"
        problems.append(f"{where}: {err.message}")
    return problems


def invalid_arguments_message(descriptor: ToolDescriptor, problems: Sequence[str]) -> str:
    """The error for invalid arguments: each problem, then the full schema to fix them."""
    lines = [f"invalid arguments for {descriptor.name!r}:"]
    lines += [f"- {p}" for p in problems]
    lines.append(f"The tool's full parameter schema: {json.dumps(dict(descriptor.parameters), sort_keys=True)}")
    return "\n".join(lines)


def unusable_message(tool: str, problem: SchemaProblem) -> str:
    """What the model reads when it calls a tool whose parameter schema is invalid."""
    return (
        f"tool {tool!r} cannot be used: its parameter schema is invalid ({problem}). "
        "No call to it can run; use another tool."
    )
