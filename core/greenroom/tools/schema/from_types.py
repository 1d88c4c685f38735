"""JSON Schema from Python types: tool parameters and plugin config sections.

One derivation serves both the ``@tool`` decorator (function signatures) and plugin
configs (attrs classes), so the schema a user reads always matches the code.
"""

from __future__ import annotations

import enum
import inspect
import re
import types
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin

import attrs

from greenroom.tools.schema.bounds import constrain

_NONE = type(None)


@attrs.frozen
class Docstring:
    summary: str
    params: Mapping[str, str]


_SECTION = re.compile(r"^(Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Notes?):\s*$")


def parse_docstring(doc: str) -> Docstring:
    """Split a docstring into its summary and per-parameter descriptions.

    Understands Google style (``Args:`` then ``name (type): text`` lines, continuation
    lines indented deeper) and Sphinx style (``:param name: text``).
    """
    lines = doc.strip().splitlines()
    summary_lines: list[str] = []
    for line in lines:
        if not line.strip() or _SECTION.match(line.strip()) or line.strip().startswith(":"):
            break
        summary_lines.append(line.strip())
    params: dict[str, str] = {}
    section = None
    current: str | None = None
    base_indent = 0
    for line in lines:
        stripped = line.strip()
        sphinx = re.match(r":param\s+(?:[\w\[\], |]+\s+)?(\w+):\s*(.*)", stripped)
        if sphinx:
            current = sphinx.group(1)
            params[current] = sphinx.group(2).strip()
            section = "sphinx"
            continue
        head = _SECTION.match(stripped)
        if head:
            section = head.group(1)
            current = None
            continue
        if section in ("Args", "Arguments", "Parameters"):
            if not stripped:
                continue
            indent = len(line) - len(line.lstrip())
            m = re.match(r"(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.*)", stripped)
            if m and (current is None or indent <= base_indent):
                current = m.group(1).lstrip("*")
                base_indent = indent
                params[current] = m.group(2).strip()
            elif current is not None:
                params[current] = (params[current] + " " + stripped).strip()
        elif section == "sphinx" and current and stripped and not stripped.startswith(":"):
            params[current] = (params[current] + " " + stripped).strip()
    return Docstring(summary=" ".join(summary_lines), params=params)


class SchemaError(TypeError):
    """A Python type that has no JSON Schema form."""


def schema_for_type(tp: Any, *, forbid_extra: bool = True) -> dict[str, Any]:
    """The JSON Schema of one Python type annotation."""
    if tp is Any or tp is inspect.Parameter.empty:
        return {}
    origin = get_origin(tp)
    if origin is typing.Annotated:
        base, *meta = get_args(tp)
        annotated = schema_for_type(base, forbid_extra=forbid_extra)
        for m in meta:
            if isinstance(m, str):
                annotated["description"] = m
        return annotated
    if tp is str:
        return {"type": "string"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer"}
    if tp is float:
        return {"type": "number"}
    if tp is _NONE or tp is None:
        return {"type": "null"}
    if tp in (dict, Mapping) or origin in (dict, Mapping, typing.Mapping, Mapping):
        args = get_args(tp)
        out: dict[str, Any] = {"type": "object"}
        if len(args) == 2 and args[1] is not Any:
            out["additionalProperties"] = schema_for_type(args[1], forbid_extra=forbid_extra)
        return out
    if tp in (list, tuple, set, frozenset, Sequence) or origin in (
        list,
        tuple,
        set,
        frozenset,
        Sequence,
        typing.Sequence,
        Iterable,
    ):
        items = [a for a in get_args(tp) if a is not Ellipsis]
        out = {"type": "array"}
        if origin is tuple and len(items) > 1 and Ellipsis not in get_args(tp):
            out["prefixItems"] = [schema_for_type(a, forbid_extra=forbid_extra) for a in items]
            out["minItems"] = out["maxItems"] = len(items)
        elif items:
            out["items"] = schema_for_type(items[0], forbid_extra=forbid_extra)
        if origin in (set, frozenset):
            out["uniqueItems"] = True
        return out
    if origin is Literal:
        values = list(get_args(tp))
        return {"enum": values}
    if origin in (Union, types.UnionType):
        args = get_args(tp)
        non_none = [a for a in args if a is not _NONE]
        if len(non_none) == 1:
            inner = schema_for_type(non_none[0], forbid_extra=forbid_extra)
            if "enum" in inner:
                return {**inner, "enum": [*inner["enum"], None]}
            if isinstance(inner.get("type"), str):
                return {**inner, "type": [inner["type"], "null"]}
            return {"anyOf": [inner, {"type": "null"}]}
        return {"anyOf": [schema_for_type(a, forbid_extra=forbid_extra) for a in args]}
    if isinstance(tp, type) and issubclass(tp, enum.Enum):
        return {"enum": [m.value for m in tp]}
    if isinstance(tp, type) and attrs.has(tp):
        return schema_for_attrs(tp, forbid_extra=forbid_extra)
    raise SchemaError(f"no JSON Schema for type {tp!r}")


def _field_description(field: attrs.Attribute, docs: Mapping[str, str]) -> str | None:
    return field.metadata.get("description") or docs.get(field.name)


def schema_for_attrs(cls: type, *, forbid_extra: bool = True) -> dict[str, Any]:
    """The JSON Schema of an attrs class: properties, required fields, defaults, and the
    bounds its fields' attrs validators say (``greenroom.tools.schema.bounds``)."""
    hints = typing.get_type_hints(cls, include_extras=True)
    docs = parse_docstring(inspect.getdoc(cls) or "").params
    props: dict[str, Any] = {}
    required: list[str] = []
    for field in attrs.fields(cls):
        if not field.init:
            continue
        key = field.alias or field.name
        prop = schema_for_type(hints.get(field.name, Any), forbid_extra=forbid_extra)
        if field.validator is not None:
            constrain(prop, field.validator)  # the bounds its validators say, declared once
        desc = _field_description(field, docs)
        if desc:
            prop["description"] = desc
        default = field.default
        if default is attrs.NOTHING:
            required.append(key)
        elif isinstance(default, attrs.Factory):  # type: ignore[arg-type]
            if not default.takes_self:  # type: ignore[union-attr]
                value = default.factory()  # type: ignore[union-attr]
                if _jsonable(value):
                    prop["default"] = _plain(value)
        elif _jsonable(default):
            prop["default"] = _plain(default)
        props[key] = prop
    out: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        out["required"] = required
    if forbid_extra:
        out["additionalProperties"] = False
    return out


def _plain(value: Any) -> Any:
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | frozenset | set):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {k: _plain(v) for k, v in value.items()}
    if attrs.has(type(value)):
        return _plain(attrs.asdict(value, recurse=True))
    return value


def _jsonable(value: Any) -> bool:
    try:
        import json

        json.dumps(_plain(value))
    except (TypeError, ValueError):
        return False
    return True


def schema_for_signature(
    func: Callable[..., Any], descriptions: Mapping[str, str], *, skip: Iterable[str] = ()
) -> dict[str, Any]:
    """The parameters schema of a function, for the ``@tool`` decorator."""
    sig = inspect.signature(func)
    hints = typing.get_type_hints(func, include_extras=True)
    props: dict[str, Any] = {}
    required: list[str] = []
    skipped = set(skip)
    for pname, param in sig.parameters.items():
        if pname in skipped or param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        try:
            prop = schema_for_type(hints.get(pname, Any))
        except SchemaError as exc:
            raise SchemaError(f"{func.__qualname__}, parameter {pname!r}: {exc}") from None
        if descriptions.get(pname):
            prop["description"] = descriptions[pname]
        if param.default is inspect.Parameter.empty:
            required.append(pname)
        elif _jsonable(param.default):
            prop["default"] = _plain(param.default)
        props[pname] = prop
    out: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        out["required"] = required
    return out
