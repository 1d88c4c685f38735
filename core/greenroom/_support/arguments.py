"""A model's tool-call arguments kept within a nesting bound before anything recurses into them.

``json``, ``jsonschema``, ``attrs.asdict`` and cattrs all recurse once per level of a
value, so arguments nested about 1,000 levels deep (a model can write them) would raise
``RecursionError`` wherever they went: parsing, validation, the trace, the saved session.
What is here works without recursion and stops at ``MAX_ARGUMENT_DEPTH``. Arguments deeper
than that reach the rest of the runtime only as text (``ToolCall.arguments`` is None and
``raw_arguments`` holds them), and the model reads that they are nested too deeply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

from greenroom.models import ModelResponse, ToolCall

MAX_ARGUMENT_DEPTH = 64
"""Levels of objects and arrays a call's arguments may have (``{}`` is one level).

Far beyond any real tool's parameters, and far below what makes ``json`` or a recursive
schema's validation run out of stack (about 200 levels for a ``$ref`` through ``anyOf``)."""

_CONTAINERS = (Mapping, list, tuple)
# A JSON string literal (escapes included), unrolled so that long strings cost no backtracking.
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_BRACKETS = re.compile(r"[\[\]{}]")


def nesting_exceeds(value: Any, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether ``value`` has more than ``limit`` levels of mappings, lists and tuples.

    Stops at the first branch past the limit, so a cyclic value (a Python object a model
    adapter built) answers True instead of looping."""
    if not isinstance(value, _CONTAINERS):
        return False
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if depth > limit:
            return True
        children = item.values() if isinstance(item, Mapping) else item
        stack.extend((c, depth + 1) for c in children if isinstance(c, _CONTAINERS))
    return False


def text_nesting_exceeds(text: str | None, limit: int = MAX_ARGUMENT_DEPTH) -> bool:
    """Whether JSON ``text`` opens more than ``limit`` objects and arrays inside each other
    (brackets inside string literals do not count), without parsing it."""
    if not text or text.count("[") + text.count("{") <= limit:
        return False
    depth = 0
    for m in _BRACKETS.finditer(_STRING.sub("", text)):
        if m.group() in "[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def parse_json_object(text: str) -> dict[str, Any] | None:
    """JSON ``text`` as an object, or None when it is malformed, nested too deeply or not
    an object."""
    if text_nesting_exceeds(text):
        return None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return value if isinstance(value, dict) else None


class _Literal(str):
    """Text already encoded, pushed on ``json_text``'s stack between values."""

    container: int | None = None  # on a closing bracket: the id of the container it closes


def _close(text: str, item: Any) -> _Literal:
    literal = _Literal(text)
    literal.container = id(item)
    return literal


def json_text(value: Any) -> str:
    """``value`` as compact JSON however deeply it is nested (``json.dumps`` recurses);
    anything that is not JSON is written as its ``str``, as the trace writer does, and a
    container inside itself (a Python object can be) as the string ``"<cycle>"``."""
    out: list[str] = []
    stack: list[Any] = [value]
    open_ids: set[int] = set()  # the containers being written, from the outside in
    while stack:
        item = stack.pop()
        if isinstance(item, _Literal):
            out.append(item)
            if item.container is not None:
                open_ids.discard(item.container)
        elif isinstance(item, Mapping | list | tuple) and id(item) in open_ids:
            out.append('"<cycle>"')
        elif isinstance(item, Mapping):
            entries = list(item.items())
            out.append("{")
            open_ids.add(id(item))
            stack.append(_close("}", item))
            for i in range(len(entries) - 1, -1, -1):
                key, child = entries[i]
                stack.append(child)
                sep = "," if i else ""
                stack.append(_Literal(f"{sep}{json.dumps(str(key), ensure_ascii=False)}:"))
        elif isinstance(item, list | tuple):
            out.append("[")
            open_ids.add(id(item))
            stack.append(_close("]", item))
            for i in range(len(item) - 1, -1, -1):
                stack.append(item[i])
                if i:
                    stack.append(_Literal(","))
        else:
            out.append(json.dumps(item, ensure_ascii=False, default=str))
    return "".join(out)


def within_bounds(call: ToolCall) -> ToolCall:
    """``call`` itself, or, when its arguments are nested too deeply, the same call with
    only their text, so nothing downstream recurses into them."""
    if call.arguments is None or not nesting_exceeds(call.arguments):
        return call
    return attrs.evolve(call, arguments=None, raw_arguments=json_text(call.arguments))


def bounded_response(response: ModelResponse) -> ModelResponse:
    """``response`` with every tool call ``within_bounds`` (itself when all already are)."""
    calls = response.message.tool_calls
    bounded = tuple(within_bounds(c) for c in calls)
    if all(b is c for b, c in zip(bounded, calls, strict=True)):
        return response
    return attrs.evolve(response, message=attrs.evolve(response.message, tool_calls=bounded))


def nested_too_deeply(call: ToolCall) -> bool:
    """Whether the call's arguments (as an object, or as text when they were kept as text)
    go deeper than ``MAX_ARGUMENT_DEPTH``."""
    if call.arguments is not None:
        return nesting_exceeds(call.arguments)
    return text_nesting_exceeds(call.raw_arguments)


def too_deep_message(tool: str) -> str:
    """What the model reads when a call's arguments are nested too deeply."""
    return (
        f"the arguments for {tool!r} are nested too deeply: more than {MAX_ARGUMENT_DEPTH} levels of "
        "objects and arrays inside each other. Send the arguments again with less nesting."
    )
