"""A JSON result in fewer tokens, with every value intact.

A result whose text is one JSON object or array is written again without the spaces and
line breaks between its tokens, and without the object fields whose value is null,
``""``, ``[]`` or ``{}`` (after their own empty fields are gone): ``false``, ``0`` and every
other value stay, array items are never dropped (their positions are part of the value),
and fields keep their order. A text whose rewriting could change a value is sent as it
came: a number a float cannot hold exactly (``1.0000000000000001``, ``1e400``), a key
given twice, a string with a lone surrogate, or JSON this parser refuses.
"""

from __future__ import annotations

import json
import math
import re
from decimal import Decimal
from typing import Any

_JSON_START = re.compile(r"\s*[\[{]")


class _Lossy(ValueError):
    """Writing the document again could change one of its values."""


def looks_like_json(text: str) -> bool:
    """Whether ``text`` starts like a JSON object or array (cheap: no parsing)."""
    return _JSON_START.match(text) is not None


def compact_text(text: str) -> str | None:
    """``text`` minified, its empty fields left out; None when it is not one JSON object or
    array, when rewriting it could change a value, or when nothing would be saved."""
    if not looks_like_json(text):
        return None
    try:
        value = json.loads(text, object_pairs_hook=_object, parse_float=_exact_float, parse_constant=_constant)
        out = json.dumps(_lean(value), ensure_ascii=False, separators=(",", ":"))
        out.encode("utf-8")  # a lone surrogate (an escape "\ud800" decoded) would not survive
    except (ValueError, RecursionError, UnicodeEncodeError):  # _Lossy and JSONDecodeError are ValueErrors
        return None
    return out if len(out) < len(text) else None


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise _Lossy("a key given twice: only its last value would stay")
    return out


def _exact_float(text: str) -> float:
    value = float(text)
    # json writes a float by its shortest repr: the number must be that float exactly
    if not math.isfinite(value) or Decimal(text) != Decimal(repr(value)):
        raise _Lossy(f"{text} is not exactly a float")
    return value


def _constant(text: str) -> Any:
    raise _Lossy(f"{text} is not JSON")


def _lean(value: Any) -> Any:
    """``value`` without the empty fields of its objects, at every depth."""
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            item = _lean(item)
            if item is None or (isinstance(item, str | list | dict) and not item):
                continue
            out[key] = item
        return out
    if isinstance(value, list):
        return [_lean(item) for item in value]
    return value
