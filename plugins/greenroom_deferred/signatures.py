"""A tool as a script calls it: one TypeScript-like line, for runs whose model writes scripts.

``tools.get_weather({city: string, unit?: "c" | "f"}) — Current weather for a city.``

The line says what a call needs and no more: each property with its type (required ones
without ``?``), enums and constants as literals, arrays and nested objects to a small
depth, unions of ``anyOf``/``oneOf``/type lists, and the description's first sentence.
A property's own description follows it as a short comment, when the line has room for
those. What a line cannot say (a ``$ref``, a pattern, bounds) is left to the tool's
validation, whose error names it. Every line is bounded in length, whatever the schema.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom import ToolDescriptor
from greenroom_deferred.listing import first_line

MAX_DEPTH = 2
"""Levels of nested objects and arrays spelled out; deeper ones are ``object``/``unknown[]``."""
MAX_LITERALS = 8
"""Enum values shown before ``| ...``."""
MAX_LINE = 800
"""Characters of one signature, at most."""
NOTE_CHARS = 60
"""Characters of a property's description kept in its comment."""

_IDENTIFIER = re.compile(r"[A-Za-z_$][A-Za-z0-9_$]*\Z")


def signature(tool: ToolDescriptor, namespace: str = "tools") -> str:
    """``tools.NAME(ARGS) — description`` (``tools["a-b"](...)`` for a name that is no identifier)."""
    name = tool.name
    callee = f"{namespace}.{name}" if _IDENTIFIER.match(name) else f"{namespace}[{json.dumps(name)}]"
    schema = tool.parameters if isinstance(tool.parameters, Mapping) else {}
    head = f"{callee}({_object(schema, 0, notes=True)})"
    if len(head) > MAX_LINE:  # the properties' comments go before any property does
        head = f"{callee}({_object(schema, 0)})"
    if len(head) > MAX_LINE:
        head = head[: MAX_LINE - 5] + " ...)"
    about = first_line(tool.description, 120)
    return f"{head} — {about}" if about else head


def format_signatures(tools: Sequence[ToolDescriptor], namespace: str = "tools") -> str:
    """``<signatures>`` with one ``signature`` per tool."""
    return "\n".join(["<signatures>", *(signature(t, namespace) for t in tools), "</signatures>"])


def _type(schema: Any, depth: int) -> str:
    if not isinstance(schema, Mapping):
        return "unknown"
    if "const" in schema:
        return _literal(schema["const"])
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        shown = " | ".join(_literal(v) for v in enum[:MAX_LITERALS])
        return shown + (" | ..." if len(enum) > MAX_LITERALS else "")
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return " | ".join(dict.fromkeys(_type(b, depth) for b in branches[:4]))
    kind = schema.get("type")
    if isinstance(kind, list):
        return " | ".join(dict.fromkeys(_type({**schema, "type": k}, depth) for k in kind[:4]))
    if kind in ("string", "boolean", "null"):
        return str(kind)
    if kind in ("integer", "number"):
        return "number"
    if kind == "array":
        items = _type(schema.get("items"), depth + 1) if depth < MAX_DEPTH else "unknown"
        return f"({items})[]" if "|" in items else f"{items}[]"
    if kind == "object" or "properties" in schema:
        return _object(schema, depth + 1) if depth < MAX_DEPTH else "object"
    return "unknown"


def _object(schema: Mapping[str, Any], depth: int, *, notes: bool = False) -> str:
    properties = schema.get("properties")
    if not isinstance(properties, Mapping) or not properties:
        extra = schema.get("additionalProperties")
        if isinstance(extra, Mapping):
            return f"Record<string, {_type(extra, depth)}>"
        return "{}" if depth == 0 else "object"
    required = schema.get("required")
    needed = set(required) if isinstance(required, list) else set()
    parts = []
    for key, sub in properties.items():
        name = key if _IDENTIFIER.match(str(key)) else json.dumps(str(key))
        part = f"{name}{'' if key in needed else '?'}: {_type(sub, depth)}"
        note = first_line(sub.get("description", ""), NOTE_CHARS) if notes and isinstance(sub, Mapping) else ""
        parts.append(f"{part} /* {note.replace('*/', '* /')} */" if note else part)
    return "{" + ", ".join(parts) + "}"


def _literal(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)[:60]
