"""Fielded BM25 documents (BM25F): a tool's name, description, parameter names, parameter
descriptions, enum values and group, each a field with its own weight and its own length
normalisation.

Repeating the name in one flat document (the ``flat`` document) boosts it, but a tool with
a long schema still has a long document, so BM25's length normalisation pushes its name
match down, and the schema's many words match queries by accident. BM25F (Robertson,
Zaragoza and Taylor 2004) normalises each field by that field's average length before
weighting and adding them, then saturates the sum once: a long schema raises its own
field's average, not the name's, and a low field weight keeps an incidental schema match
below a name match. The table is built here with numpy (no bm25s), in bm25s' layout, so
the same scoring code reads it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from greenroom import ToolDescriptor
from greenroom.kit import peek_schema
from greenroom_ranking.config import FIELDS

DEFAULT_FIELD_WEIGHTS: dict[str, float] = {
    "name": 2.0,
    "description": 1.0,
    "parameters": 1.0,
    "parameter_descriptions": 1.0,
    "enums": 0.5,
    "group": 0.5,
}
"""Chosen on the even half of 1,000 seal_tools and metatool queries (docs/ranking.md). Each
field is normalised by its own average length, so even at weight 1 a long schema's
parameter descriptions add a bounded amount to its tool, never dilute its name."""

ENUM_VALUES = 20
"""Enum values read per parameter: a long list (country codes) says little more."""

_DEPTH = 3


def _mapping(value: Any) -> bool:
    return type(value) is dict or isinstance(value, Mapping)


def _walk(schema: Any, names: list[str], descriptions: list[str], enums: list[str], depth: int = 0) -> None:
    if not _mapping(schema) or depth > _DEPTH:
        return
    props = schema.get("properties")
    if not _mapping(props):
        return
    for pname, spec in props.items():
        names.append(str(pname))
        if not _mapping(spec):
            continue
        desc = spec.get("description")
        if isinstance(desc, str):
            descriptions.append(desc)
        values = spec.get("enum")
        if isinstance(values, list):
            enums.extend(str(v) for v in values[:ENUM_VALUES] if isinstance(v, (str, int, float)))
        _walk(spec, names, descriptions, enums, depth + 1)
        items = spec.get("items")
        if _mapping(items):
            _walk(items, names, descriptions, enums, depth + 1)


def tool_fields(tool: ToolDescriptor, *, parameters: bool = True) -> tuple[str, ...]:
    """The texts of a tool's fields, in ``FIELDS`` order (identifiers are split later, by
    the analyser)."""
    names: list[str] = []
    descriptions: list[str] = []
    enums: list[str] = []
    if parameters:
        _walk(peek_schema(tool.parameters), names, descriptions, enums)  # one read per tool: nothing kept
    return (
        tool.name,
        tool.description,
        "\n".join(names),
        "\n".join(descriptions),
        "\n".join(enums),
        tool.group or "",
    )


def weighted_postings(
    documents: Sequence[Sequence[Sequence[str]]], weights: Sequence[float], k1: float, b: float
) -> tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]:
    """BM25F over analysed fields: ``documents[i][f]`` is tool ``i``'s tokens of field
    ``f``. Returns the vocabulary and, per token in id order, the tools it scores and how
    much (``data[k]`` to tool ``indices[k]`` for ``k`` in ``indptr[t]:indptr[t + 1]``).

    A token's pseudo-frequency in a tool is ``sum_f w_f * tf_f / (1 - b + b * len_f /
    avg_f)`` (``avg_f`` over the tools whose field ``f`` is not empty); its score is
    ``idf * tf / (k1 + tf)`` with bm25s' (Lucene's) idf, ``log(1 + (N - df + 0.5) / (df + 0.5))``.
    """
    n = len(documents)
    vocab: dict[str, int] = {}
    rows: list[np.ndarray] = []
    cols: list[np.ndarray] = []
    vals: list[np.ndarray] = []
    for f, weight in enumerate(weights):
        if weight <= 0:
            continue
        lengths = np.fromiter((len(d[f]) for d in documents), dtype=np.float64, count=n)
        total = int(lengths.sum())
        if total == 0:
            continue
        ids = np.fromiter((vocab.setdefault(t, len(vocab)) for d in documents for t in d[f]), np.int64, count=total)
        owner = np.repeat(np.arange(n, dtype=np.int64), lengths.astype(np.int64))
        # the field's average over the tools that have it: a catalog where few tools have
        # parameters would otherwise make every one of those few look long
        norm = 1.0 - b + b * lengths / (total / np.count_nonzero(lengths))
        rows.append(owner)
        cols.append(ids)
        vals.append((weight / norm)[owner])
    size = len(vocab)
    if not rows:
        return vocab, np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(size + 1, np.int64)
    key = np.concatenate(cols) * max(n, 1) + np.concatenate(rows)  # token-major: the table's order
    unique, inverse = np.unique(key, return_inverse=True)
    tf = np.bincount(inverse, weights=np.concatenate(vals))
    token, tool = np.divmod(unique, max(n, 1))
    df = np.bincount(token, minlength=size)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    data = (idf[token] * tf / (k1 + tf)).astype(np.float32)
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return vocab, data, tool.astype(np.int32), indptr


def field_weights(given: Mapping[str, float]) -> tuple[float, ...]:
    """``given`` over the defaults, in ``FIELDS`` order."""
    merged = {**DEFAULT_FIELD_WEIGHTS, **given}
    return tuple(float(merged[f]) for f in FIELDS)


def analysed_fields(tools: Iterable[ToolDescriptor], analyse: Any, *, parameters: bool) -> list[list[list[str]]]:
    """Each tool's fields, analysed (``analyse``: many texts -> token lists, words shared)."""
    texts = [tool_fields(t, parameters=parameters) for t in tools]
    width = len(FIELDS)
    flat = analyse(text for fields in texts for text in fields)
    return [flat[i * width : (i + 1) * width] for i in range(len(texts))]
