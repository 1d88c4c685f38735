"""What is wrong with a tool's parameter schema, as data: the kind of fault, where, and how."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import Any

import attrs


class SchemaFault(enum.Enum):
    """What kind of thing is wrong with a schema."""

    MISSING = "missing"
    """The tool came without a parameter schema (an MCP server that left out ``inputSchema``)."""
    NOT_A_SCHEMA = "not_a_schema"
    """The schema, or a subschema, is not a JSON object (or a boolean, below the top)."""
    NOT_AN_OBJECT = "not_an_object"
    """The top level says a ``type`` other than ``object``: a tool's arguments are an
    object, and providers refuse any other parameter schema (the whole request with it)."""
    UNKNOWN_TYPE = "unknown_type"
    BAD_PATTERN = "bad_pattern"
    """A ``pattern`` or ``patternProperties`` key that is not a valid regular expression."""
    DANGLING_REF = "dangling_ref"
    """A ``$ref`` that points to nothing in the schema (or to a remote schema)."""
    REF_CYCLE = "ref_cycle"
    """``$ref``s that lead back to where they started without descending into the
    arguments: validating would never end."""
    BAD_KEYWORD = "bad_keyword"
    """A keyword whose value has the wrong type (``"minimum": "3"``, ``"required": true``)."""
    TOO_DEEP = "too_deep"
    META_SCHEMA = "meta_schema"
    """The dialect's meta-schema rejects it (found when the tool is first called)."""
    UNAPPLICABLE = "unapplicable"
    """Validating arguments against it raised."""


@attrs.frozen
class SchemaProblem:
    """What is wrong with a schema (``fault``), where (a JSON pointer into it), and how."""

    fault: SchemaFault
    where: str
    detail: str

    def __str__(self) -> str:
        return f"{self.where}: {self.detail}"


Path = tuple[Any, ...] | None
"""Where a subschema is, as nested ``(parent path, key)`` pairs: turned into a pointer
only when a problem is found."""

Scopes = tuple[Mapping[str, Any], ...]
"""The subschemas above a place that set a base URI with ``$id`` (outermost first)."""


def pointer(path: Path) -> str:
    """A JSON pointer to ``path``; a long one keeps its first and last keys."""
    keys: list[str] = []
    while path is not None:
        path, key = path
        keys.append(str(key).replace("~", "~0").replace("/", "~1"))
    keys.reverse()
    if len(keys) > 12:
        keys = [*keys[:4], f"...({len(keys) - 8} more)...", *keys[-4:]]
    return "#" + "".join("/" + k for k in keys)
