"""Which tool schemas can be sent with ``strict: true`` (OpenAI's structured outputs for
function calls), decided conservatively and never by changing a schema.

Strict mode makes the model's arguments always match the schema, but it accepts only a
subset of JSON Schema: every object lists all its properties in ``required`` and says
``additionalProperties: false``, and only some keywords appear. Turning an ordinary
schema into one (making optional properties required but nullable, forbidding extra
properties) would change what the tool is given, so greenroom does not: a schema is sent
strict only when it already is one (a ``@tool`` function whose parameters have no
defaults usually is), and any other is sent as it is, without ``strict``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

KEYWORDS = frozenset(
    {
        "type",
        "properties",
        "required",
        "additionalProperties",
        "items",
        "enum",
        "const",
        "anyOf",
        "description",
        "title",
        "$ref",
        "$defs",
        "definitions",
        "pattern",
        "format",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minItems",
        "maxItems",
    }
)
"""The keywords strict mode takes; a schema with any other (``default``, ``oneOf``,
``allOf``, ``minLength``, ``patternProperties``, ...) is not sent strict."""

FORMATS = frozenset({"date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"})
TYPES = frozenset({"string", "number", "integer", "boolean", "object", "array", "null"})
MAX_DEPTH = 10
MAX_PROPERTIES = 5000
MAX_ENUM_VALUES = 1000


class _Count:
    properties = 0
    enum_values = 0


def strict_allowed(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` (a tool's parameters) meets strict mode's rules as it stands."""
    if not isinstance(schema, Mapping) or schema.get("type") != "object" or "anyOf" in schema:
        return False
    count = _Count()
    return _node(schema, 0, count) and count.properties <= MAX_PROPERTIES and count.enum_values <= MAX_ENUM_VALUES


def _node(node: Any, depth: int, count: _Count) -> bool:
    if not isinstance(node, Mapping) or depth > MAX_DEPTH or not set(node) <= KEYWORDS:
        return False
    ref = node.get("$ref")
    if ref is not None and not (isinstance(ref, str) and ref.startswith("#")):
        return False
    types = node.get("type")
    kinds = [types] if isinstance(types, str) else types
    if kinds is not None and (not isinstance(kinds, list) or not kinds or not set(kinds) <= TYPES):
        return False
    if kinds is None and not ({"$ref", "anyOf", "enum", "const"} & set(node)):
        return False  # a schema that allows anything has no strict form
    fmt = node.get("format")
    if fmt is not None and fmt not in FORMATS:
        return False
    enum = node.get("enum")
    if enum is not None:
        if not isinstance(enum, list):
            return False
        count.enum_values += len(enum)
    if kinds is not None and "object" in kinds and not _object(node, depth, count):
        return False
    if "items" in node and not _node(node["items"], depth + 1, count):
        return False
    if "anyOf" in node:
        options = node["anyOf"]
        if not isinstance(options, list) or not all(_node(o, depth + 1, count) for o in options):
            return False
    for key in ("$defs", "definitions"):
        defs = node.get(key)
        if defs is not None and not (
            isinstance(defs, Mapping) and all(_node(d, depth + 1, count) for d in defs.values())
        ):
            return False
    return True


def _object(node: Mapping[str, Any], depth: int, count: _Count) -> bool:
    properties = node.get("properties", {})
    required = node.get("required", [])
    if node.get("additionalProperties") is not False or not isinstance(properties, Mapping):
        return False
    if not isinstance(required, list) or sorted(map(str, required)) != sorted(properties):
        return False
    count.properties += len(properties)
    return all(_node(p, depth + 1, count) for p in properties.values())


__all__ = ["strict_allowed"]
