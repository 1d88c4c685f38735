"""Fielded BM25 documents (BM25F): a tool's name, description, parameter names, parameter
descriptions, enum values and group, each a field with its own weight.

A token's frequency in a tool is the weighted sum of its frequencies in the fields, and the
tool's length the weighted sum of its fields' lengths (the simple BM25F of Robertson,
Zaragoza and Taylor 2004, one length normalisation per tool). With parameter fields at
half a description's weight, a long schema adds half as much to a tool's length as the
same words of description, and its words match at half weight, so a name or description
match is not drowned by a schema's incidental one. The same tool length for all fields
keeps tools comparable across catalogs that mix rich schemas with bare descriptions: a
per-field normalisation lets every extra field add score, and a catalog of MCP schemas then
buries its description-only tools (measured on the combined catalog, docs/ranking.md).

The table is built with numpy (no bm25s), in bm25s' layout, so the same scoring code reads it.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from greenroom import ToolDescriptor
from greenroom.kit import peek_schema
from greenroom_ranking.config import FIELDS
from greenroom_ranking.text import analyze_chunks

DEFAULT_FIELD_WEIGHTS: dict[str, float] = {
    "name": 2.0,
    "description": 1.0,
    "parameters": 0.5,
    "parameter_descriptions": 0.5,
    "enums": 0.25,
    "group": 0.5,
}
"""Chosen on the even positions of 600 seal_tools and 600 metatool queries, each dataset
alone and in the combined catalog (docs/ranking.md)."""

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


Postings = tuple[dict[str, int], np.ndarray, np.ndarray, np.ndarray]
"""A vocabulary and, per token in id order, the tools it scores and how much:
``data[k]`` to tool ``indices[k]`` for ``k`` in ``indptr[t]:indptr[t + 1]``."""


def weighted_postings(
    documents: Sequence[Sequence[Sequence[str]]], weights: Sequence[float], k1: float, b: float
) -> Postings:
    """BM25F over analysed fields: ``documents[i][f]`` is tool ``i``'s tokens of field ``f``."""
    width = len(weights)
    vocab: dict[str, int] = {}
    lengths = [len(field) for doc in documents for field in doc]
    token = np.fromiter(
        (vocab.setdefault(t, len(vocab)) for doc in documents for field in doc for t in field),
        dtype=np.int64,
        count=sum(lengths),
    )
    slot = np.repeat(np.arange(len(lengths), dtype=np.int64), lengths)
    return (vocab, *occurrence_postings(slot, token, len(documents), len(vocab), width, weights, k1, b))


def occurrence_postings(
    slot: np.ndarray,
    token: np.ndarray,
    n: int,
    size: int,
    width: int,
    weights: Sequence[float],
    k1: float,
    b: float,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """BM25F from token occurrences: occurrence ``j`` is token ``token[j]`` in field
    ``slot[j] % width`` of tool ``slot[j] // width`` (``n`` tools, ``size`` tokens).

    A token's pseudo-frequency in a tool is ``sum_f w_f * tf_f / (1 - b + b * len / avg)``
    with ``len = sum_f w_f * len_f`` the tool's weighted length (``avg`` the catalog's
    mean); its score is ``idf * tf / (k1 + tf)`` with bm25s' (Lucene's) idf,
    ``log(1 + (N - df + 0.5) / (df + 0.5))``.
    """
    w = np.asarray(weights, dtype=np.float64)
    lengths = np.bincount(slot, minlength=n * width).reshape(n, width).astype(np.float64)
    length = lengths @ w  # each tool's weighted length
    norm = 1.0 - b + b * length / max(float(length.mean()), 1e-9)
    scale = (w[None, :] / norm[:, None]).ravel()  # each slot's weight over its tool's norm
    keep = w[slot % width] > 0
    slot, token = slot[keep], token[keep]
    if not slot.size:
        return np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(size + 1, np.int64)
    key = token * max(n, 1) + slot // width  # token-major: the table's order
    unique, inverse = np.unique(key, return_inverse=True)
    tf = np.bincount(inverse.ravel(), weights=scale[slot])
    term, tool = np.divmod(unique, max(n, 1))
    df = np.bincount(term, minlength=size)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    data = (idf[term] * tf / (k1 + tf)).astype(np.float32)
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return data, tool.astype(np.int32), indptr


_SEPARATOR = "\x1f"  # the unit separator: no word character, and no tool text holds it in practice
_PIECES = re.compile(r"[^\W_]+|\x1f")


def fielded_postings(
    tools: Iterable[ToolDescriptor], weights: Sequence[float], k1: float, b: float, *, parameters: bool
) -> tuple[int, Postings]:
    """The catalog's BM25F postings (``occurrence_postings``) and its size.

    Built for large catalogs: every field's text is joined into one string and cut into
    words by one regular expression; each distinct word is analysed once
    (``analyze_chunks``), and every occurrence becomes token ids by numpy indexing, so
    the Python work is per distinct word, not per word of the catalog."""
    width = len(FIELDS)
    texts = [text for tool in tools for text in tool_fields(tool, parameters=parameters)]
    n = len(texts) // width
    joined = _SEPARATOR.join(texts)
    if joined.count(_SEPARATOR) != max(len(texts) - 1, 0):  # a text held one: each is cleaned
        joined = _SEPARATOR.join(t.replace(_SEPARATOR, " ") for t in texts)
    del texts
    pieces = _PIECES.findall(joined)
    del joined
    # distinct words in order of first sight, then every piece's id by a C-level lookup
    chunks = {c: i for i, c in enumerate(dict.fromkeys(itertools.chain((_SEPARATOR,), pieces)))}
    ids = np.fromiter(map(chunks.__getitem__, pieces), dtype=np.int64, count=len(pieces))
    del pieces
    slot_of = np.cumsum(ids == 0)  # each piece's text: the separators before it
    word = ids != 0
    ids, slot_of = ids[word], slot_of[word]
    vocab: dict[str, int] = {}
    analysed = analyze_chunks(list(chunks)[1:], joined=True)
    per_chunk = np.zeros(len(chunks), dtype=np.int64)
    per_chunk[1:] = [len(tokens) for tokens in analysed]
    flat = np.fromiter(
        (vocab.setdefault(t, len(vocab)) for tokens in analysed for t in tokens),
        dtype=np.int64,
        count=int(per_chunk.sum()),
    )
    starts = np.cumsum(per_chunk) - per_chunk  # where each chunk's tokens start in ``flat``
    count = per_chunk[ids]
    total = int(count.sum())
    first = np.cumsum(count) - count
    at = np.repeat(starts[ids] - first, count) + np.arange(total, dtype=np.int64)
    slot = np.repeat(slot_of, count)
    return n, (vocab, *occurrence_postings(slot, flat[at], n, len(vocab), width, weights, k1, b))


def field_weights(given: Mapping[str, float]) -> tuple[float, ...]:
    """``given`` over the defaults, in ``FIELDS`` order."""
    merged = {**DEFAULT_FIELD_WEIGHTS, **given}
    return tuple(float(merged[f]) for f in FIELDS)
