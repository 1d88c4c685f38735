"""Arguments that satisfy a tool's schema, the way a careful model fills them in.

Deterministic: the same schema always gives the same arguments. Each required property
takes the first of: its ``const``, its first ``examples`` entry, its ``default``, its
first ``enum`` value, else a plain value of its type within its bounds (a string of
``minLength``, a number at ``minimum``, an array of ``minItems`` items, an object with
its own required properties), with well-known ``format`` values (date, email, URI,
UUID). Optional properties are left out, as models mostly do. ``anyOf``/``oneOf`` take
their first branch; ``allOf`` merges its branches' properties.

What this cannot satisfy (a ``pattern``, a ``not``) still gets a value; the runtime's
validation then rejects the call, and the session counts it as a call with invalid
arguments, as it would a model's mistake.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

MAX_DEPTH = 8
"""Nesting followed at most; deeper required objects are left empty."""

FORMATS: Mapping[str, str] = {
    "date": "2025-01-31",
    "date-time": "2025-01-31T09:00:00Z",
    "time": "09:00:00",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "ipv4": "192.0.2.1",
    "hostname": "example.com",
}


def arguments_for(schema: Mapping[str, Any] | None) -> dict[str, Any]:
    """The arguments object for a tool whose parameters are ``schema`` (None: none)."""
    if not isinstance(schema, Mapping):
        return {}
    value = instance(schema, 0)
    return value if isinstance(value, dict) else {}


def instance(schema: Any, depth: int) -> Any:
    if not isinstance(schema, Mapping):
        return None
    if "const" in schema:
        return schema["const"]
    examples = schema.get("examples")
    if isinstance(examples, list) and examples:
        return examples[0]
    if "default" in schema:
        return schema["default"]
    enum = schema.get("enum")
    if isinstance(enum, list) and enum:
        return enum[0]
    for key in ("anyOf", "oneOf"):
        branches = schema.get(key)
        if isinstance(branches, list) and branches:
            return instance(branches[0], depth)
    return _typed(schema, _type_of(schema), depth)


def _type_of(schema: Mapping[str, Any]) -> str:
    kind = schema.get("type")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), kind[0] if kind else None)
    if isinstance(kind, str):
        return kind
    if "properties" in schema or "allOf" in schema:
        return "object"
    if "items" in schema:
        return "array"
    return "string"


def _typed(schema: Mapping[str, Any], kind: str, depth: int) -> Any:
    if kind == "object":
        return _object(schema, depth)
    if kind == "array":
        count = schema.get("minItems", 0)
        count = count if isinstance(count, int) and 0 <= count <= 16 else 0
        item = instance(schema.get("items"), depth + 1) if depth < MAX_DEPTH else None
        return [item for _ in range(count)]
    if kind in ("integer", "number"):
        return _number(schema, kind)
    if kind == "boolean":
        return False
    if kind == "null":
        return None
    return _string(schema)


def _object(schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
    props: dict[str, Any] = {}
    required: list[str] = []
    for part in [schema, *[b for b in schema.get("allOf", ()) if isinstance(b, Mapping)]]:
        if isinstance(part.get("properties"), Mapping):
            props.update(part["properties"])
        if isinstance(part.get("required"), list):
            required += [r for r in part["required"] if isinstance(r, str)]
    if depth >= MAX_DEPTH:
        return {}
    return {name: instance(props.get(name, {}), depth + 1) for name in dict.fromkeys(required)}


def _number(schema: Mapping[str, Any], kind: str) -> int | float:
    low = schema.get("minimum")
    if not isinstance(low, (int, float)):
        low = schema.get("exclusiveMinimum")
        low = low + 1 if isinstance(low, (int, float)) else None
    high = schema.get("maximum")
    value: int | float = 1 if low is None else low
    if isinstance(high, (int, float)) and value > high:
        value = high
    return int(value) if kind == "integer" else float(value)


def _string(schema: Mapping[str, Any]) -> str:
    fmt = schema.get("format")
    if isinstance(fmt, str) and fmt in FORMATS:
        return FORMATS[fmt]
    size = schema.get("minLength", 1)
    size = size if isinstance(size, int) and 0 <= size <= 256 else 1
    high = schema.get("maxLength")
    text = "example"
    if len(text) < size:
        text = text + "x" * (size - len(text))
    if isinstance(high, int) and 0 <= high < len(text):
        text = text[:high]
    return text
