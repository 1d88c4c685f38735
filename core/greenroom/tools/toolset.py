"""The tools of a runtime by name, and checking a call's arguments against them."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

import jsonschema

from greenroom.tools import Tool, ToolDescriptor


class DuplicateToolError(ValueError):
    pass


class ToolSet(Mapping[str, Tool]):
    """The tools of a runtime by name, with their compiled argument validators."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._descriptors: list[ToolDescriptor] | None = None
        self.version = 0  # bumped on every change, so views built from the set can be reused
        for t in tools:
            self.add(t)

    def add(self, tool: Tool, *, replace: bool = False) -> None:
        name = tool.descriptor.name
        if name in self._tools and not replace:
            raise DuplicateToolError(f"two tools are named {name!r}")
        self._tools[name] = tool
        self._validators.pop(name, None)
        self._descriptors = None
        self.version += 1

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def descriptors(self) -> list[ToolDescriptor]:
        """Every tool's descriptor, in registration order (a fresh list; built once per change)."""
        if self._descriptors is None:
            self._descriptors = [t.descriptor for t in self._tools.values()]
        return list(self._descriptors)

    def validator(self, name: str) -> jsonschema.protocols.Validator:
        """The tool's argument validator, compiled on first use and kept."""
        v = self._validators.get(name)
        if v is None:
            schema = dict(self._tools[name].descriptor.parameters or {"type": "object"})
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            v = cls(schema)
            self._validators[name] = v
        return v


def validation_problems(tools: ToolSet, name: str, args: Mapping[str, Any]) -> list[str]:
    """Every problem with a call's arguments: JSON Schema first, then the tool's own check."""
    problems = []
    for err in sorted(tools.validator(name).iter_errors(dict(args)), key=lambda e: list(map(str, e.path))):
        where = "/".join(str(p) for p in err.absolute_path) or "(arguments)"
        problems.append(f"{where}: {err.message}")
    tool = tools[name]
    check = getattr(tool, "validate_args", None)
    if not problems and callable(check):
        problems.extend(check(dict(args)) or [])
    return problems


def invalid_arguments_message(descriptor: ToolDescriptor, problems: Sequence[str]) -> str:
    """The error for invalid arguments: each problem, then the full schema to fix them."""
    lines = [f"invalid arguments for {descriptor.name!r}:"]
    lines += [f"- {p}" for p in problems]
    lines.append(f"The tool's full parameter schema: {json.dumps(dict(descriptor.parameters), sort_keys=True)}")
    return "\n".join(lines)
