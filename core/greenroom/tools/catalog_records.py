"""The records of a catalog file: a JSON list (or ``{"tools": [...]}``) or JSONL, each
record with where it is (a line number, or a position in the list), for errors that say
where.

JSON is parsed by ``orjson`` where it gives exactly what the standard library's ``json``
gives, and by ``json`` everywhere else, so a catalog reads the same either way (the same
values, the same errors at the same places). orjson is about twice as fast, but it
rejects some text ``json`` accepts (NaN and Infinity, numbers beyond a float, lone
surrogates, a byte order mark), which then goes to ``json``, and it reads two things
differently, which are kept from it: an integer beyond 64 bits (a float in orjson; text
with a run of 19 digits goes to ``json``) and nesting ``json`` finds too deep (orjson
goes to 1024 levels, ``json`` to what is left of the recursion limit; orjson is given
the text inside enough extra brackets that it stops at ``_ORJSON_DEPTH`` levels).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import orjson


class CatalogError(ValueError):
    pass


_CHUNK = 512
"""JSONL lines parsed together: one parse per chunk shares the strings of repeated keys
("type", "properties", ...) within it, which per-line parsing copies on every line (about
a fifth of a big catalog's memory)."""

_REGION = 1 << 20
"""Bytes of a JSONL file split into lines at once (a list of every line would copy the
whole file)."""

_ORJSON_LIMIT = 1024
"""orjson's nesting limit (it accepts text 1024 arrays or objects deep)."""

_ORJSON_DEPTH = 256
"""Nesting orjson is let read; deeper text goes to ``json`` (no tool schema nests near it)."""

_WRAP = _ORJSON_LIMIT - _ORJSON_DEPTH
_OPEN, _CLOSE = b"[" * _WRAP, b"]" * _WRAP

_DIGITS = bytes.maketrans(b"0123456789", b"0" * 10)
_LONG_NUMBER = b"0" * 19
"""The shortest digit run that can be an integer orjson turns into a float
(-9999999999999999999 is below -2**63)."""


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CatalogError(f"{path}: catalog file not found") from None


def _orjson_safe() -> bool:
    """Whether ``json`` here has the stack to read ``_ORJSON_DEPTH`` levels (it counts
    them against the recursion limit, less the frames already in use)."""
    depth = 0
    frame: FrameType | None = sys._getframe()
    while frame is not None and depth < sys.getrecursionlimit():
        depth, frame = depth + 1, frame.f_back
    return sys.getrecursionlimit() - depth > _ORJSON_DEPTH + 64


def _fast_loads(text: bytes) -> Any:
    """``text`` parsed by orjson when ``json`` would give the same value; else raises
    ``ValueError`` (the caller then asks ``json``)."""
    for start in range(0, len(text), _REGION):  # a slice at a time: no second copy of a big file
        if _LONG_NUMBER in text[max(0, start - 18) : start + _REGION].translate(_DIGITS):
            raise ValueError("a number orjson may read differently")
    value = orjson.loads(b"".join((_OPEN, text, _CLOSE)))
    for _ in range(_WRAP):
        value = value[0]
    return value


def records(path: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    """``(key, record)``: the line number of each JSONL record, or the index of each
    record of a JSON list."""
    for chunk in record_chunks(path, data):
        yield from chunk


def record_chunks(path: Path, data: bytes) -> Iterator[list[tuple[int, Any]]]:
    """``records`` a list at a time (a loop over them is faster than over ``records``)."""
    fast = _orjson_safe()
    if path.suffix == ".json":
        yield list(enumerate(_whole(path, data, fast)))
        return
    chunk: list[tuple[int, bytes]] = []
    for lines in _line_regions(data):
        chunk += lines
        while len(chunk) >= _CHUNK:
            yield _parse_chunk(path, chunk[:_CHUNK], fast)
            del chunk[:_CHUNK]
    yield _parse_chunk(path, chunk, fast)


def _whole(path: Path, data: bytes, fast: bool) -> list[Any]:
    loaded: Any = None
    try:
        loaded = _fast_loads(data) if fast else None
    except ValueError:
        pass
    if loaded is None:  # orjson declined (or JSON null, which json reads the same)
        try:
            loaded = json.loads(data)
        except (ValueError, RecursionError) as exc:  # a UnicodeDecodeError is a ValueError
            raise CatalogError(f"{path}: not valid JSON: {exc}") from None
    if isinstance(loaded, dict) and "tools" in loaded:
        loaded = loaded["tools"]
    if not isinstance(loaded, list):
        raise CatalogError(f"{path}: expected a list of tools (or {{'tools': [...]}})")
    return loaded


def _line_regions(data: bytes) -> Iterator[list[tuple[int, bytes]]]:
    """The numbered lines that are not blank, a region of about ``_REGION`` bytes at a
    time, split at line feeds only (a JSON string may hold U+2028, which ``splitlines``
    would cut at)."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a byte order mark
    lineno = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", min(start + _REGION, size))
        if end < 0:
            end = size
        lines = data[start:end].split(b"\n")
        yield [(n, line) for n, line in enumerate(lines, lineno + 1) if line.strip()]
        lineno += len(lines)
        start = end + 1


def _parse_chunk(path: Path, chunk: list[tuple[int, bytes]], fast: bool) -> list[tuple[int, Any]]:
    """The chunk's lines parsed as one JSON list; when that fails, or yields a different
    number of values (a line holding two), line by line, for the same error as ever."""
    if not chunk:
        return []
    text = b"[" + b",\n".join([line for _, line in chunk]) + b"]"
    items: Any = None
    if fast:
        try:
            items = _fast_loads(text)
        except ValueError:  # orjson's JSONDecodeError is a ValueError
            pass
    try:
        if items is None:
            items = json.loads(text)
        if isinstance(items, list) and len(items) == len(chunk):
            return [(lineno, item) for (lineno, _), item in zip(chunk, items, strict=True)]
    except (ValueError, RecursionError):
        pass
    out = []
    for lineno, line in chunk:
        try:
            out.append((lineno, json.loads(line.decode("utf-8"))))
        except UnicodeDecodeError as exc:
            raise CatalogError(f"{path}:{lineno}: not UTF-8 text: {exc}") from None
        except json.JSONDecodeError as exc:
            raise CatalogError(f"{path}:{lineno}: not valid JSON: {exc.msg}") from None
        except RecursionError:
            raise CatalogError(f"{path}:{lineno}: nested too deeply to read") from None
    return out
