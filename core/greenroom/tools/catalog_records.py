"""The records of a catalog file: a JSON list (or ``{"tools": [...]}``) or JSONL, each
record with where it is (a line number, or a position in the list), for errors that say
where."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any


class CatalogError(ValueError):
    pass


_CHUNK = 512
"""JSONL lines parsed together: one parse per chunk shares the strings of repeated keys
("type", "properties", ...) within it, which per-line parsing copies on every line (about
a fifth of a big catalog's memory)."""


def read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise CatalogError(f"{path}: catalog file not found") from None


def records(path: Path, data: bytes) -> Iterator[tuple[int, Any]]:
    """``(key, record)``: the line number of each JSONL record, or the index of each
    record of a JSON list."""
    if path.suffix == ".json":
        try:
            loaded = json.loads(data)
        except (ValueError, RecursionError) as exc:  # a UnicodeDecodeError is a ValueError
            raise CatalogError(f"{path}: not valid JSON: {exc}") from None
        if isinstance(loaded, dict) and "tools" in loaded:
            loaded = loaded["tools"]
        if not isinstance(loaded, list):
            raise CatalogError(f"{path}: expected a list of tools (or {{'tools': [...]}})")
        yield from enumerate(loaded)
        return
    chunk: list[tuple[int, bytes]] = []
    for lineno, line in _lines(data):
        if line.strip():
            chunk.append((lineno, line))
            if len(chunk) >= _CHUNK:
                yield from _parse_chunk(path, chunk)
                chunk = []
    yield from _parse_chunk(path, chunk)


def _lines(data: bytes) -> Iterator[tuple[int, bytes]]:
    """Numbered lines, split at line feeds only (a JSON string may hold U+2028, which
    ``splitlines`` would cut at), without a list of them all."""
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0  # a byte order mark
    lineno = 0
    while start < len(data):
        end = data.find(b"\n", start)
        if end < 0:
            end = len(data)
        lineno += 1
        yield lineno, data[start:end]
        start = end + 1


def _parse_chunk(path: Path, chunk: list[tuple[int, bytes]]) -> list[tuple[int, Any]]:
    """The chunk's lines parsed as one JSON list; when that fails, or yields a different
    number of values (a line holding two), line by line, for the same error as ever."""
    if not chunk:
        return []
    try:
        items = json.loads(b"[" + b",\n".join(line for _, line in chunk) + b"]")
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
