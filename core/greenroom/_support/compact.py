"""The byte-stable compact JSON form greenroom hashes and counts, at any nesting depth."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import attrs


def compact_json(value: Any) -> str:
    """The byte-stable JSON form used for hashing and counting. A value nested deeper than
    the json module recurses (about 1,000 levels, model arguments say) gets the same text
    from a loop, rather than a ``RecursionError``."""
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=plain)
    except RecursionError:
        return _deep_json(value)


def plain(value: Any) -> Any:
    """What json writes for an object it does not know: a read-only mapping (a catalog's
    schema, a ``MappingProxyType``) as the JSON object it holds."""
    if isinstance(value, Mapping):
        return dict(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


@attrs.frozen
class _Text:
    text: str


def _deep_json(value: Any) -> str:
    out: list[str] = []
    stack: list[Any] = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, _Text):
            out.append(item.text)
            continue
        todo: list[Any]
        if isinstance(item, Mapping):
            todo = [_Text("{")]
            for i, key in enumerate(sorted(item)):
                # json writes a key that is not a string (1, true, null) as the string of its JSON
                name = _leaf(key if isinstance(key, str) else _leaf(key))
                todo += [_Text(("," if i else "") + name + ":"), item[key]]
            todo.append(_Text("}"))
        elif isinstance(item, list | tuple):
            todo = [_Text("[")]
            for i, element in enumerate(item):
                todo += [_Text(",")] if i else []
                todo.append(element)
            todo.append(_Text("]"))
        else:
            todo = [_Text(_leaf(item))]
        stack.extend(reversed(todo))
    return "".join(out)


def _leaf(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)
