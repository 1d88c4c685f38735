"""Whether a tool's parameter schema can be used, and if not, what is wrong with it and where.

An invalid schema (an unknown type, a regex Python cannot compile, a ``$ref`` to nothing)
makes jsonschema raise while validating a call, and a provider reject every request
that carries it. A schema is judged by one function, ``schema_problem``, wherever it is
judged (a run, ``greenroom config check``, an MCP server's listing):

- ``load_problem``: one walk over the schema, without recursion and with a depth bound,
  checking what validation relies on (each subschema's shape, ``type`` names, keyword
  values, ``pattern`` regexes, ``$ref`` targets), which the meta-schema does not check;
- then ``meta_schema_problem`` (``greenroom.tools.schema.meta``): the schema against
  its own dialect's meta-schema (2020-12 when it names none, as JSON Schema and MCP
  say). A schema the meta-schema rejects is invalid (``"examples": "a, b"`` where the
  keyword must be an array, say): MCP requires tool schemas to conform to their
  dialect, and a provider that checks schemas refuses the whole request carrying one.

Remote ``$ref`` targets are never fetched: a validator built by ``validator_for`` knows
only the schema and the dialects' meta-schemas, and jsonschema-rs is asked only about
schemas whose dialect it has built in.

For a catalog file (or an MCP listing, kept as one) ``schema_problem`` runs over the
whole catalog at once (a schema listed again, as by many copies of one server, is judged
once) and its findings are kept on disk under the catalog's digest (``catalog_problems``):
a process that loads a known catalog checks no schema. A tool of no catalog (a Python
tool) is walked when it loads and meets the meta-schema at its first call.
"""

from __future__ import annotations

import enum
import marshal
import re
from collections.abc import Mapping
from typing import Any

import jsonschema
import referencing.jsonschema
from jsonschema_specifications import REGISTRY as DIALECTS

from greenroom._support.digest_cache import DigestCache, default_digest_cache, work
from greenroom.tools.catalog import CatalogFile, CatalogSchema, peek_schema
from greenroom.tools.schema.meta import meta_schema_problem, validator_class
from greenroom.tools.schema.problem import Path, SchemaFault, SchemaProblem, Scopes, pointer
from greenroom.tools.schema.refs import Reference, reference_problem

MAX_SCHEMA_DEPTH = 64
"""Levels of subschemas a parameter schema may have; validating deeper ones can run
out of stack."""

_TYPES = frozenset({"array", "boolean", "integer", "null", "number", "object", "string"})
_TYPE_LIST = ", ".join(sorted(_TYPES))


class _Kind(enum.Enum):
    """How the walk treats a keyword's value."""

    SCHEMA = enum.auto()  # one subschema
    SCHEMA_MAP = enum.auto()  # an object of subschemas
    SCHEMA_LIST = enum.auto()  # a non-empty list of subschemas
    ITEMS = enum.auto()  # one subschema, or (before 2020-12) a list of them
    DEPENDENCIES = enum.auto()  # an object of subschemas or lists of names
    TYPE = enum.auto()
    PATTERN = enum.auto()
    PATTERN_MAP = enum.auto()  # patternProperties: regex keys, subschema values
    NUMBER = enum.auto()
    EXCLUSIVE = enum.auto()  # a number, or a boolean in draft 4
    DIVISOR = enum.auto()
    COUNT = enum.auto()
    NAMES = enum.auto()  # required: a list of property names
    LIST = enum.auto()  # enum
    REF = enum.auto()


_KEYWORDS: dict[str, _Kind] = {
    **dict.fromkeys(
        (
            "additionalProperties",
            "additionalItems",
            "contains",
            "propertyNames",
            "not",
            "if",
            "then",
            "else",
            "unevaluatedProperties",
            "unevaluatedItems",
            "contentSchema",
        ),
        _Kind.SCHEMA,
    ),
    **dict.fromkeys(("properties", "$defs", "definitions", "dependentSchemas"), _Kind.SCHEMA_MAP),
    **dict.fromkeys(("allOf", "anyOf", "oneOf", "prefixItems"), _Kind.SCHEMA_LIST),
    **dict.fromkeys(("minimum", "maximum"), _Kind.NUMBER),
    **dict.fromkeys(("exclusiveMinimum", "exclusiveMaximum"), _Kind.EXCLUSIVE),
    **dict.fromkeys(
        ("minLength", "maxLength", "minItems", "maxItems", "minProperties", "maxProperties", "minContains"),
        _Kind.COUNT,
    ),
    "maxContains": _Kind.COUNT,
    "items": _Kind.ITEMS,
    "dependencies": _Kind.DEPENDENCIES,
    "patternProperties": _Kind.PATTERN_MAP,
    "type": _Kind.TYPE,
    "pattern": _Kind.PATTERN,
    "multipleOf": _Kind.DIVISOR,
    "required": _Kind.NAMES,
    "enum": _Kind.LIST,
    "$ref": _Kind.REF,
    "$dynamicRef": _Kind.REF,
}

# dialects in which ``items`` may be a list of schemas (2020-12 calls that ``prefixItems``)
_TUPLE_ITEMS = {jsonschema.Draft3Validator, jsonschema.Draft4Validator, jsonschema.Draft6Validator}
_TUPLE_ITEMS |= {jsonschema.Draft7Validator, jsonschema.Draft201909Validator}


def compile_validator(schema: Mapping[str, Any]) -> jsonschema.protocols.Validator:
    """A validator for ``schema`` that resolves references inside it and the dialects'
    meta-schemas only: a remote ``$ref`` fails instead of fetching anything."""
    return validator_class(schema)(dict(schema), registry=DIALECTS)


def _kind(value: Any) -> str:
    return type(value).__name__


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_count(value: Any) -> bool:
    if isinstance(value, float):
        return value.is_integer() and value >= 0
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _regex_problem(pattern: Any) -> str | None:
    if not isinstance(pattern, str):
        return f"a regular expression must be a string, not {_kind(pattern)}"
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        return f"{pattern[:200]!r} is not a valid regular expression: {exc}"
    return None


class _Walk:
    """One pass over a schema: each subschema's keywords checked, its subschemas queued."""

    def __init__(self, tuple_items: bool) -> None:
        self.tuple_items = tuple_items
        # (subschema, where, depth, the subschemas above it that set a base URI with $id)
        self.todo: list[tuple[Any, Path, int, Scopes]] = []
        self.refs: list[Reference] = []
        self.nodes: list[Mapping[str, Any]] = []  # every subschema that is an object

    def keyword(
        self, node: Mapping[str, Any], key: str, kind: _Kind, path: Path, depth: int, scopes: Scopes
    ) -> tuple[SchemaFault, str] | None:
        """The problem with one keyword's value, or None (its subschemas are queued)."""
        value = node[key]
        here = (path, key)
        if kind is _Kind.SCHEMA:
            self.todo.append((value, here, depth, scopes))
        elif kind is _Kind.SCHEMA_MAP or kind is _Kind.PATTERN_MAP:
            if not isinstance(value, Mapping):
                return SchemaFault.BAD_KEYWORD, f"{key!r} must be an object of schemas, not {_kind(value)}"
            for name, sub in value.items():
                if kind is _Kind.PATTERN_MAP and (bad := _regex_problem(name)):
                    return SchemaFault.BAD_PATTERN, bad
                self.todo.append((sub, (here, name), depth, scopes))
        elif kind is _Kind.SCHEMA_LIST or (kind is _Kind.ITEMS and isinstance(value, list)):
            if kind is _Kind.ITEMS and not self.tuple_items:
                return SchemaFault.BAD_KEYWORD, "'items' must be one schema in this dialect (a list is 'prefixItems')"
            if not isinstance(value, list) or not value:
                return SchemaFault.BAD_KEYWORD, f"{key!r} must be a non-empty list of schemas"
            self.todo.extend((sub, (here, i), depth, scopes) for i, sub in enumerate(value))
        elif kind is _Kind.ITEMS:
            self.todo.append((value, here, depth, scopes))
        elif kind is _Kind.DEPENDENCIES:
            if not isinstance(value, Mapping):
                return SchemaFault.BAD_KEYWORD, f"'dependencies' must be an object, not {_kind(value)}"
            # a dependency is a list of property names or a schema
            self.todo.extend((sub, (here, n), depth, scopes) for n, sub in value.items() if not isinstance(sub, list))
        elif kind is _Kind.TYPE:
            for name in value if isinstance(value, list) else (value,):
                if not isinstance(name, str) or name not in _TYPES:
                    return SchemaFault.UNKNOWN_TYPE, f"unknown type {name!r}; a type is one of {_TYPE_LIST}"
        elif kind is _Kind.PATTERN:
            if bad := _regex_problem(value):
                return SchemaFault.BAD_PATTERN, bad
        elif kind is _Kind.NUMBER or kind is _Kind.EXCLUSIVE or kind is _Kind.DIVISOR:
            if not _is_number(value) and not (kind is _Kind.EXCLUSIVE and isinstance(value, bool)):
                return SchemaFault.BAD_KEYWORD, f"{key!r} must be a number, not {_kind(value)}"
            if kind is _Kind.DIVISOR and value <= 0:
                return SchemaFault.BAD_KEYWORD, f"{key!r} must be greater than 0"
        elif kind is _Kind.COUNT:
            if not _is_count(value):
                return SchemaFault.BAD_KEYWORD, f"{key!r} must be a non-negative integer, not {value!r}"
        elif kind is _Kind.NAMES:
            if not isinstance(value, list) or not all(isinstance(n, str) for n in value):
                return SchemaFault.BAD_KEYWORD, f"{key!r} must be a list of property names"
        elif kind is _Kind.LIST:
            if not isinstance(value, list):
                return SchemaFault.BAD_KEYWORD, f"{key!r} must be a list, not {_kind(value)}"
        elif kind is _Kind.REF:
            if not isinstance(value, str):
                return SchemaFault.DANGLING_REF, f"{key!r} must be a string, not {_kind(value)}"
            self.refs.append((value, here, scopes, node))
        return None


def load_problem(schema: Any) -> SchemaProblem | None:
    """The first thing in a parameter schema that would make validating a call (or a
    provider) fail, found without recursion; None when there is nothing."""
    if not isinstance(schema, Mapping):
        return SchemaProblem(
            SchemaFault.NOT_A_SCHEMA, "#", f"a parameter schema must be a JSON object, not {_kind(schema)}"
        )
    top = schema.get("type")
    if top is not None and top != "object" and not (isinstance(top, list) and "object" in top):
        return SchemaProblem(
            SchemaFault.NOT_AN_OBJECT, "#/type", f"a tool's parameters must be an object schema, not type {top!r}"
        )
    cls = validator_class(schema)
    specification = referencing.jsonschema.specification_with(
        str(cls.META_SCHEMA.get("$schema", "")), default=referencing.jsonschema.DRAFT202012
    )
    walk = _Walk(cls in _TUPLE_ITEMS)
    walk.todo.append((schema, None, 0, ()))
    keywords, of_type, types = _KEYWORDS, _Kind.TYPE, _TYPES
    while walk.todo:
        node, path, depth, scopes = walk.todo.pop()
        if type(node) is not dict:  # the usual case first: a Mapping check costs more
            if isinstance(node, bool):
                continue
            if not isinstance(node, Mapping):
                return SchemaProblem(
                    SchemaFault.NOT_A_SCHEMA,
                    pointer(path),
                    f"a schema must be an object or a boolean, not {_kind(node)}",
                )
        if depth >= MAX_SCHEMA_DEPTH:
            return SchemaProblem(
                SchemaFault.TOO_DEEP, pointer(path), f"subschemas nested more than {MAX_SCHEMA_DEPTH} levels deep"
            )
        if path is not None and ("$id" in node or "id" in node) and specification.id_of(node):
            scopes = (*scopes, node)
        walk.nodes.append(node)
        for key in node:
            kind = keywords.get(key)
            if kind is None or (kind is of_type and type(value := node[key]) is str and value in types):
                continue  # not a keyword the walk checks, or the commonest one, fine (inline for speed)
            if (bad := walk.keyword(node, key, kind, path, depth + 1, scopes)) is not None:
                return SchemaProblem(bad[0], pointer((path, key)), bad[1])
    if not walk.refs:
        return None
    return reference_problem(schema, specification, walk.refs, walk.nodes)


SCHEMA_CHECKS = "schema.v3"
"""The digest cache's namespace for ``schema_problem`` over a catalog (bump with the check)."""

LOAD_CHECKS = FULL_CHECKS = SCHEMA_CHECKS
"""Former names of the one namespace (a run and a config check once judged apart)."""


def schema_problem(schema: Any) -> SchemaProblem | None:
    """The judgement of a parameter schema: what ``load_problem`` finds, and else what
    the dialect's meta-schema rejects; None for a usable schema."""
    found = load_problem(schema)
    if found is None and isinstance(schema, Mapping):
        found = meta_schema_problem(schema)
    return found


full_problem = schema_problem
"""The same judgement, by the name ``greenroom.compose`` knows it."""


def catalog_problems(
    catalog: CatalogFile, *, full: bool = True, cache: DigestCache | None = None
) -> dict[int, SchemaProblem]:
    """The problem of each schema in ``catalog`` that has one, by position: what
    ``schema_problem`` finds (``full`` is the same judgement; it is kept for callers that
    name it). Computed once for the whole catalog and kept under its digest, in the
    process and on disk."""
    known: dict[int, SchemaProblem] | None = catalog.derived.get(SCHEMA_CHECKS)
    if known is None:

        def build() -> dict[int, SchemaProblem]:
            work["schema checks"] += len(catalog.descriptors)
            # A schema listed again is judged once, found by its packed bytes: equal bytes are
            # an equal schema (equal schemas may differ in bytes: judged twice). It pays where
            # schemas repeat (many copies of one server; the scale benchmark's catalogs);
            # the dict holds a reference to bytes the schemas hold anyway.
            judged: dict[bytes, SchemaProblem | None] = {}
            found = {}
            for i, d in enumerate(catalog.descriptors):
                parameters = d.parameters
                key = parameters.packed if type(parameters) is CatalogSchema else None
                if key is None:
                    schema = peek_schema(parameters)
                    try:
                        key = marshal.dumps(dict(schema) if type(schema) is not dict else schema)
                    except ValueError:  # nested deeper than marshal goes
                        problem = schema_problem(schema)
                        if problem is not None:
                            found[i] = problem
                        continue
                if key in judged:
                    problem = judged[key]
                else:
                    problem = judged[key] = schema_problem(peek_schema(parameters))
                if problem is not None:
                    found[i] = problem
            return found

        known = (cache or default_digest_cache()).get_or_build(
            SCHEMA_CHECKS,
            catalog.digest,
            build,
            encode=lambda found: {
                "tools": len(catalog.descriptors),
                "problems": [[i, p.fault.value, p.where, p.detail] for i, p in sorted(found.items())],
            },
            decode=lambda value: _decode_problems(value, len(catalog.descriptors)),
        )
        catalog.derived[SCHEMA_CHECKS] = known
    return known


def _decode_problems(value: Any, size: int) -> dict[int, SchemaProblem]:
    if value["tools"] != size:
        raise ValueError("the entry is of another catalog")
    out: dict[int, SchemaProblem] = {}
    for i, fault, where, detail in value["problems"]:
        if not (isinstance(i, int) and 0 <= i < size and isinstance(where, str) and isinstance(detail, str)):
            raise ValueError("not a problem of this catalog")
        out[i] = SchemaProblem(SchemaFault(fault), where, detail)
    return out


__all__ = [
    "FULL_CHECKS",
    "LOAD_CHECKS",
    "MAX_SCHEMA_DEPTH",
    "SCHEMA_CHECKS",
    "SchemaFault",
    "SchemaProblem",
    "catalog_problems",
    "compile_validator",
    "full_problem",
    "load_problem",
    "meta_schema_problem",
    "schema_problem",
    "validator_class",
]
