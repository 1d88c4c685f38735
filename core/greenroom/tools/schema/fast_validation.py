"""A fast accept path for a call's arguments: jsonschema-rs may say yes, only jsonschema says no.

``jsonschema`` validates a small tool's arguments (a search query and a count) in 7 to
11 us; ``jsonschema-rs`` (Rust) in well under one. The Rust validator is used only to
*accept*: arguments it accepts are valid without running jsonschema, and anything else
(a rejection, a schema it cannot compile, an exception while validating) goes to
jsonschema, which alone words the problems the model reads and alone rejects. So the
Rust side must never accept what jsonschema rejects, and the two disagree in places:

- regexes: Rust's ECMA-style classes are not Python's (``\\D`` and ``\\s`` on non-ASCII
  text, ``$`` before a trailing newline, control characters in ``\\s``), and a schema with
  ``not``, ``oneOf`` or ``if`` turns a stricter match into a looser verdict. A schema with
  a regex gets the fast path only if every regex is in a plain subset both read alike, and
  then only for arguments whose strings and keys are printable ASCII;
- ``multipleOf`` with a fraction (Python's float division says 0.3 is no multiple of 0.1,
  Rust says it is): no fast path for such a schema, and none for float arguments of a
  schema with any ``multipleOf``;
- numbers past 2**53 (compared through floats on one side and exactly on the other), NaN
  and infinities, tuples (arrays to Rust, not to jsonschema), subclasses and non-string
  keys: such arguments go to jsonschema;
- ``contentEncoding``/``contentMediaType`` (checked by Rust in drafts 6 and 7, ignored by
  jsonschema) and ``$dynamicRef``/``$recursiveRef``: no fast path for such a schema.

Nothing is ever fetched: a remote ``$ref`` reaches a retriever that refuses, so the schema
does not compile and its calls go to jsonschema (which fetches nothing either). Formats
are not validated on either side.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import jsonschema
import jsonschema_rs

_RUST_DIALECTS: dict[type, type[jsonschema_rs.Validator]] = {
    jsonschema.Draft4Validator: jsonschema_rs.Draft4Validator,
    jsonschema.Draft6Validator: jsonschema_rs.Draft6Validator,
    jsonschema.Draft7Validator: jsonschema_rs.Draft7Validator,
    jsonschema.Draft201909Validator: jsonschema_rs.Draft201909Validator,
    jsonschema.Draft202012Validator: jsonschema_rs.Draft202012Validator,
}
"""jsonschema's dialect -> the Rust validator of the same draft (none for draft 3)."""

_EXACT = 2**53
"""Numbers below this in size are the same to both sides: a float holds them exactly."""

_MAX_VALUES = 10_000
"""Values walked in one call's arguments before giving the call to jsonschema."""

_NO_FAST_PATH = frozenset({"contentEncoding", "contentMediaType", "$dynamicRef", "$recursiveRef"})

_PLAIN_ESCAPES = frozenset("dDwWsS")  # classes that agree on printable ASCII
_SPECIAL = frozenset("\\.^$*+?()[]{}|")
_QUANTIFIERS = frozenset("*+?")


def _refuse(uri: str) -> Any:
    raise ValueError(f"remote schemas are never fetched ({uri})")


def _fatal(exc: BaseException) -> bool:
    """Whether an exception must propagate: anything but an error or a Rust panic (which
    pyo3 raises as a BaseException)."""
    return not isinstance(exc, Exception) and type(exc).__name__ != "PanicException"


def _escape_ok(c: str, in_class: bool) -> bool:
    if c in _PLAIN_ESCAPES:
        return True
    # an escaped punctuation mark is the mark itself to both; \b means backspace in a class
    return c.isascii() and not c.isalnum() and c.isprintable() and not (in_class and c == "b")


def _class_end(pattern: str, i: int) -> int:
    """The index after the character class opening at ``pattern[i]``, or -1 when it uses
    more than literals, ranges and plain escapes (Rust's nested classes and set operations,
    a leading ``]`` that ECMA reads as an empty class)."""
    i += 1
    if i < len(pattern) and pattern[i] == "^":
        i += 1
    start = i
    while i < len(pattern):
        c = pattern[i]
        if c == "]" and i > start:
            return i + 1
        if c == "[" or c == "]":
            return -1
        if c == "\\":
            if i + 1 >= len(pattern) or not _escape_ok(pattern[i + 1], True):
                return -1
            i += 2
            continue
        if pattern.startswith(("&&", "--", "~~"), i):
            return -1
        i += 1
    return -1


def _quantifier_end(pattern: str, i: int) -> int:
    """The index after a ``{n}``, ``{n,}`` or ``{n,m}`` at ``pattern[i]``, or -1."""
    close = pattern.find("}", i)
    if close < 0:
        return -1
    low, _, high = pattern[i + 1 : close].partition(",")
    if not (low.isascii() and low.isdigit()) or (high and not (high.isascii() and high.isdigit())):
        return -1
    return close + 1


def plain_regex(pattern: str) -> bool:
    """Whether Python's ``re`` and the Rust validator read ``pattern`` alike on printable
    ASCII text: literals, ``.``, anchors, plain groups, alternation, greedy or lazy
    quantifiers and simple classes; no flags, lookaround, backreferences or named groups."""
    i, n = 0, len(pattern)
    atom = False  # whether a quantifier may follow
    while i < n:
        c = pattern[i]
        if c == "\\":
            if i + 1 >= n or not _escape_ok(pattern[i + 1], False):
                return False
            atom, i = pattern[i + 1] not in "bB", i + 2
        elif c == "[":
            i = _class_end(pattern, i)
            if i < 0:
                return False
            atom = True
        elif c == "(":
            if pattern.startswith("(?", i):
                if not pattern.startswith("(?:", i):
                    return False
                i += 1
            atom, i = False, i + 1
        elif c in _QUANTIFIERS or c == "{":
            if not atom:
                return False
            i = i + 1 if c != "{" else _quantifier_end(pattern, i)
            if i < 0:
                return False
            if i < n and pattern[i] == "?":  # lazy; a second quantifier is not allowed
                i += 1
            atom = False
        elif c == "}" or c == "]":
            return False
        else:
            atom, i = c not in "^$|", i + 1  # ')' closes a group: quantifiable
    return True


class FastValidator:
    """A tool's Rust validator and what its arguments must be like for its yes to stand."""

    __slots__ = ("_floats", "_rust", "_text")

    def __init__(self, rust: jsonschema_rs.Validator, *, ascii_text: bool, floats: bool) -> None:
        self._rust = rust
        self._text = ascii_text  # every string and key must be printable ASCII (the schema has regexes)
        self._floats = floats  # float arguments may use the fast path (the schema has no multipleOf)

    def accepts(self, args: Mapping[str, Any]) -> bool:
        """True when ``args`` are valid for sure; False means only "ask jsonschema"."""
        instance = args if type(args) is dict else dict(args)
        if not self._representable(instance):
            return False
        try:
            return self._rust.is_valid(instance) is True
        except BaseException as exc:
            if _fatal(exc):
                raise
            return False

    def _representable(self, value: dict[str, Any]) -> bool:
        """Whether every value in the arguments is one both validators see alike."""
        text, floats = self._text, self._floats
        todo: list[Any] = [value]
        seen = 0
        while todo:
            v = todo.pop()
            seen += 1
            kind = type(v)
            if kind is str:
                if text and not (v.isascii() and v.isprintable()):
                    return False
            elif kind is int:
                if not -_EXACT < v < _EXACT:
                    return False
            elif kind is dict:
                if seen + len(v) > _MAX_VALUES:
                    return False
                for key, item in v.items():
                    if type(key) is not str or (text and not (key.isascii() and key.isprintable())):
                        return False
                    todo.append(item)
            elif kind is list:
                if seen + len(v) > _MAX_VALUES:
                    return False
                todo.extend(v)
            elif kind is float:
                if not floats or not (math.isfinite(v) and -_EXACT < v < _EXACT):
                    return False
            elif v is not None and kind is not bool:
                return False
        return True


def _schema_traits(schema: Any) -> tuple[bool, bool, bool] | None:
    """(has a regex, has multipleOf, has a non-finite number) for the whole schema, or None
    when it uses what the fast path leaves to jsonschema."""
    regex = multiple = odd_number = False
    todo: list[Any] = [schema]
    while todo:
        node = todo.pop()
        if isinstance(node, Mapping):
            for key, value in node.items():
                if key in _NO_FAST_PATH or (key == "$schema" and node is not schema):
                    return None  # (an embedded resource of another dialect too)
                if key == "pattern" and isinstance(value, str):
                    if not plain_regex(value):
                        return None
                    regex = True
                elif key == "patternProperties" and isinstance(value, Mapping):
                    if not all(isinstance(p, str) and plain_regex(p) for p in value):
                        return None
                    regex = regex or bool(value)
                elif key == "multipleOf":
                    if not (type(value) is int or (type(value) is float and value.is_integer())):
                        return None
                    multiple = True
                todo.append(value)
        elif isinstance(node, list):
            todo.extend(node)
        elif type(node) is float and not math.isfinite(node):
            odd_number = True
    return regex, multiple, odd_number


def compile_fast(schema: Mapping[str, Any], dialect: type) -> FastValidator | None:
    """The fast path for ``schema`` read as ``dialect`` (jsonschema's validator class), or
    None when there is none: no Rust counterpart, a keyword or regex left to jsonschema, or
    a schema the Rust side cannot compile (a remote ``$ref`` among them)."""
    rust_class = _RUST_DIALECTS.get(dialect)
    if "$schema" in schema and jsonschema.validators.validator_for(schema, default=None) is None:
        rust_class = None  # a dialect jsonschema does not know, read as 2020-12: Rust might not
    traits = _schema_traits(schema) if rust_class is not None else None
    if rust_class is None or traits is None or traits[2]:
        return None
    try:
        rust = rust_class(dict(schema), validate_formats=False, retriever=_refuse)
    except BaseException as exc:
        if _fatal(exc):
            raise
        return None
    return FastValidator(rust, ascii_text=traits[0], floats=not traits[1])


__all__ = ["FastValidator", "compile_fast", "plain_regex"]
