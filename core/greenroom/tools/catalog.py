"""Descriptor-only tools from a JSON or JSONL catalog file.

The format is one tool per line (JSONL) or a JSON list of objects:
``{"name", "description", "parameters" (JSON Schema or null), "group" (or null)}``, the
format of the evaluation datasets. Such tools can be listed, deferred, searched and
benchmarked; executing one returns an error result.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from greenroom.tools.base import ToolCallContext, ToolDescriptor, ToolResult


class CatalogTool:
    """A descriptor without an implementation, read from a catalog file.

    Catalog tools let a user inspect and benchmark a large catalog; calling one gives
    the model a clear error instead of a crash.
    """

    timeout: float | None = None

    def __init__(self, descriptor: ToolDescriptor, source: str) -> None:
        self._descriptor = descriptor
        self.source = source

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        return ToolResult.error(
            f"tool {self._descriptor.name!r} comes from the catalog {self.source} and has no "
            "implementation here; it can be searched and inspected but not executed"
        )


_KEYS = {"name", "description", "parameters", "group", "deferrable", "annotations"}


class CatalogError(ValueError):
    pass


def _records(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CatalogError(f"{path}: catalog file not found") from None
    if path.suffix == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CatalogError(f"{path}: not valid JSON: {exc}") from None
        if isinstance(data, dict) and "tools" in data:
            data = data["tools"]
        if not isinstance(data, list):
            raise CatalogError(f"{path}: expected a list of tools (or {{'tools': [...]}})")
        for i, item in enumerate(data):
            yield f"{path}: tools[{i}]", item
        return
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            yield f"{path}:{lineno}", json.loads(line)
        except json.JSONDecodeError as exc:
            raise CatalogError(f"{path}:{lineno}: not valid JSON: {exc.msg}") from None


def descriptor_from_record(where: str, item: Any) -> ToolDescriptor:
    if not isinstance(item, dict):
        raise CatalogError(f"{where}: expected an object, got {type(item).__name__}")
    unknown = set(item) - _KEYS
    if unknown:
        raise CatalogError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise CatalogError(f"{where}: 'name' must be a non-empty string")
    params = item.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise CatalogError(f"{where}: 'parameters' of {name!r} must be a JSON Schema object")
    return ToolDescriptor(
        name=name,
        description=str(item.get("description") or ""),
        parameters=params,
        group=item.get("group"),
        deferrable=item.get("deferrable", "automatic"),
    )


def load_catalog(path: str | Path, *, limit: int | None = None) -> list[CatalogTool]:
    """Read a catalog file into descriptor-only tools (first ``limit`` if given)."""
    p = Path(path)
    out: list[CatalogTool] = []
    seen: set[str] = set()
    for where, item in _records(p):
        d = descriptor_from_record(where, item)
        if d.name in seen:
            continue  # catalogs merged from several sources repeat names; keep the first
        seen.add(d.name)
        out.append(CatalogTool(d, str(p)))
        if limit is not None and len(out) >= limit:
            break
    return out
