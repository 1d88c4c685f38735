"""A parameter schema against its dialect's meta-schema (2020-12 when it names none).

jsonschema's check costs about a millisecond a schema on the 2020-12 meta-schema, so
jsonschema-rs checks first: a schema it accepts is valid, and only one it rejects (or
cannot check) is checked by jsonschema, which alone says no and words the problem. It is
asked only about schemas whose dialect it has built in: it would fetch any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema_rs

from greenroom.tools.schema.problem import Path, SchemaFault, SchemaProblem, pointer


def validator_class(schema: Mapping[str, Any]) -> type[jsonschema.protocols.Validator]:
    """The validator of the dialect ``$schema`` names (2020-12 when it names none or one
    jsonschema does not know)."""
    cls: type[jsonschema.protocols.Validator] = jsonschema.validators.validator_for(
        schema, default=jsonschema.Draft202012Validator
    )
    return cls


_META: dict[type, jsonschema.protocols.Validator] = {}

_BUILT_IN = frozenset(
    str(cls.META_SCHEMA.get("$id") or cls.META_SCHEMA.get("id"))
    for cls in (
        jsonschema.Draft4Validator,
        jsonschema.Draft6Validator,
        jsonschema.Draft7Validator,
        jsonschema.Draft201909Validator,
        jsonschema.Draft202012Validator,
    )
)
"""``$schema`` values whose meta-schema jsonschema-rs has built in (any other it would fetch)."""


def _fast_accept(schema: Mapping[str, Any]) -> bool:
    """jsonschema-rs's meta-schema check says yes (no means: ask jsonschema)."""
    dialect = schema.get("$schema")
    if dialect is not None and dialect not in _BUILT_IN:
        return False
    try:
        return bool(jsonschema_rs.meta.is_valid(schema if isinstance(schema, dict) else dict(schema)))
    except Exception:  # a value it cannot take (a non-string key, a huge number): jsonschema decides
        return False


def meta_schema_problem(schema: Mapping[str, Any]) -> SchemaProblem | None:
    """What the dialect's meta-schema rejects in ``schema`` (its most relevant error)."""
    if _fast_accept(schema):
        return None
    cls = validator_class(schema)
    meta = _META.get(cls)
    if meta is None:
        meta = _META[cls] = cls(cls.META_SCHEMA)
    try:
        error = jsonschema.exceptions.best_match(meta.iter_errors(dict(schema)))
    except Exception as exc:  # a schema the meta-schema check itself trips on
        return SchemaProblem(SchemaFault.META_SCHEMA, "#", f"{type(exc).__name__}: {exc}")
    if error is None:
        return None
    path: Path = None
    for key in error.absolute_path:
        path = (path, key)
    return SchemaProblem(SchemaFault.META_SCHEMA, pointer(path), _short(error.message))


def _short(text: str, width: int = 300) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


__all__ = ["meta_schema_problem", "validator_class"]
