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

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from greenroom import ToolDescriptor
from greenroom.kit import peek_schema
from greenroom_ranking.analysis.occurrences import Words, occurrences
from greenroom_ranking.config import FIELDS
from greenroom_ranking.substrings import stable_order

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
    # None (a key the schema lacks) is the usual other value: answered before the
    # abstract-class check, which costs more than the rest of a catalog's walk
    return type(value) is dict or (value is not None and isinstance(value, Mapping))


def _walk(schema: Any, names: list[str], descriptions: list[str], enums: list[str], depth: int = 0) -> None:
    if depth <= _DEPTH and _mapping(schema):
        props = schema.get("properties")
        if _mapping(props):
            _properties(props, names, descriptions, enums, depth)


def _properties(
    props: Mapping[Any, Any], names: list[str], descriptions: list[str], enums: list[str], depth: int
) -> None:
    # ``_walk`` of a schema whose properties are ``props``, with the test of a nested
    # schema's properties made here rather than in a call: most parameters have none,
    # and a call for each was a good part of a large catalog's walk
    deeper = depth < _DEPTH
    for pname, spec in props.items():
        names.append(str(pname))
        if type(spec) is not dict and not _mapping(spec):
            continue
        desc = spec.get("description")
        if isinstance(desc, str):
            descriptions.append(desc)
        values = spec.get("enum")
        if values is not None and isinstance(values, list):
            enums.extend(str(v) for v in values[:ENUM_VALUES] if isinstance(v, (str, int, float)))
        if deeper:
            sub = spec.get("properties")
            if sub is not None and _mapping(sub):
                _properties(sub, names, descriptions, enums, depth + 1)
            items = spec.get("items")
            if items is not None and _mapping(items):
                sub = items.get("properties")
                if sub is not None and _mapping(sub):
                    _properties(sub, names, descriptions, enums, depth + 1)


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
    ``slot[j] % width`` of tool ``slot[j] // width`` (``n`` tools, ``size`` tokens), in
    ascending order of ``slot``.

    A token's pseudo-frequency in a tool is ``sum_f w_f * tf_f / (1 - b + b * len / avg)``
    with ``len = sum_f w_f * len_f`` the tool's weighted length (``avg`` the catalog's
    mean); its score is ``idf * tf / (k1 + tf)`` with bm25s' (Lucene's) idf,
    ``log(1 + (N - df + 0.5) / (df + 0.5))``.
    """
    return _postings([slot, token], n, size, width, weights, k1, b)


def _postings(
    held: list[np.ndarray], n: int, size: int, width: int, weights: Sequence[float], k1: float, b: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``occurrence_postings`` of ``held = [slot, token]``, which it empties: the arrays
    are dropped here as soon as they are reordered (a caller's names would keep them)."""
    slot, token = held
    held.clear()
    w = np.asarray(weights, dtype=np.float64)
    lengths = np.bincount(slot, minlength=n * width).reshape(n, width).astype(np.float64)
    length = lengths @ w  # each tool's weighted length
    del lengths
    mean = float(length.mean()) if length.size else 0.0  # an empty catalog has no mean length
    norm = 1.0 - b + b * length / max(mean, 1e-9)
    scale = (w[None, :] / norm[:, None]).ravel()  # each slot's weight over its tool's norm
    if (w <= 0).any():  # a field weighed 0 is dropped; with none, no per-occurrence test at all
        keep = w[slot % width] > 0
        slot, token = slot[keep], token[keep]
        del keep
    if not slot.size:
        return np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(size + 1, np.int64)
    # token-major, as the table is: a stable sort by token keeps tools ascending (slots
    # are) and each (token, tool)'s occurrences in their order, so the sums below add in
    # the order of the occurrences, to the same floats as a bincount over them would
    counts = np.bincount(token, minlength=size)
    slot = _token_major(slot, token, counts)
    kind = token.dtype
    del token
    token = np.repeat(np.arange(size, dtype=kind), counts)  # sorted, each id its count times
    del counts
    term, tool, tf = _grouped(token, slot, scale, width)
    del token, slot
    df = np.bincount(term, minlength=size)
    idf = np.log1p((n - df + 0.5) / (df + 0.5))
    # idf * tf / (k1 + tf) in float64, a chunk at a time into the float32 table: no
    # whole float64 array of every (token, tool) beside ``tf``
    data = np.empty(tf.size, dtype=np.float32)
    for start in range(0, tf.size, CHUNK):
        part = tf[start : start + CHUNK]
        score = idf[term[start : start + CHUNK]]
        score *= part
        score /= k1 + part
        data[start : start + CHUNK] = score
    del term, tf
    indptr = np.zeros(size + 1, dtype=np.int64)
    np.cumsum(df, out=indptr[1:])
    return data, tool.astype(np.int32, copy=False), indptr


def _token_major(slot: np.ndarray, token: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """``slot`` in the order of a stable sort of ``token`` (``counts`` its ids' counts),
    sorted ``CHUNK`` occurrences at a time and each chunk's slots put in place: one
    stable sort of them all would hold an 8-byte index of every occurrence, and the
    sort as much again, at the build's peak (about 50 MB for 100,000 tools)."""
    if token.size <= CHUNK:  # one chunk: the plain sort, with no more to hold
        return slot[stable_order(token, counts.size)]
    out = np.empty_like(slot)
    free = np.cumsum(counts) - counts  # each token's next place in ``out``
    for start in range(0, token.size, CHUNK):
        tk = token[start : start + CHUNK]
        order = stable_order(tk, counts.size)
        tk = tk[order]
        first = np.flatnonzero(np.concatenate(([True], tk[1:] != tk[:-1])))  # each token's run
        runs = np.diff(np.append(first, tk.size))
        place = free[tk] + (np.arange(tk.size) - np.repeat(first, runs))  # its place, then its rank in the run
        out[place] = slot[start : start + CHUNK][order]
        free[tk[first]] += runs
    return out


CHUNK = 1 << 18
"""Occurrences sorted by token, or summed into (token, tool) frequencies, at once (and
(token, tool) scores computed): the temporary arrays of a whole 100,000-tool catalog
would take about 60 MB more at the build's peak."""


def _grouped(
    token: np.ndarray, slot: np.ndarray, scale: np.ndarray, width: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each (token, tool) group's token, tool and summed ``scale[slot]`` over token-major
    occurrences, ``CHUNK`` at a time. A chunk ends where a group does, so every group's
    sum adds its occurrences in their order, to the same float as one bincount would."""
    terms: list[np.ndarray] = []
    tools: list[np.ndarray] = []
    sums: list[np.ndarray] = []
    total, start, step = token.size, 0, CHUNK
    while start < total:
        end = min(start + step, total)
        tk, tl = token[start:end], slot[start:end] // width
        new = np.empty(tk.size, dtype=bool)
        new[0] = True  # a chunk starts a group
        np.not_equal(tk[1:], tk[:-1], out=new[1:])
        new[1:] |= tl[1:] != tl[:-1]
        if end < total and tk[-1] == token[end] and tl[-1] == slot[end] // width:  # its last group goes on
            cut = int(np.flatnonzero(new)[-1])
            if cut == 0:  # one group fills the chunk: a longer one
                step *= 2
                continue
            end = start + cut
            tk, tl, new = tk[:cut], tl[:cut], new[:cut]
        group = np.cumsum(new) - 1
        sums.append(np.bincount(group, weights=scale[slot[start:end]]))
        terms.append(tk[new])
        tools.append(tl[new])
        start, step = end, CHUNK
    # one at a time, each chunk's parts dropped once joined
    return _joined(terms), _joined(tools), _joined(sums)


def _joined(parts: list[np.ndarray]) -> np.ndarray:
    whole = np.concatenate(parts)
    parts.clear()
    return whole


def fielded_postings(
    tools: Iterable[ToolDescriptor], weights: Sequence[float], k1: float, b: float, *, parameters: bool
) -> tuple[int, Postings]:
    """The catalog's BM25F postings (``occurrence_postings``) and its size.

    Built for large catalogs, ``BATCH`` tools at a time (``analysis.occurrences``), so the
    Python work is per distinct word, not per word of the catalog, and what is kept per
    occurrence is two 32-bit integers."""
    width = len(FIELDS)
    tools = tools if isinstance(tools, Sequence) else list(tools)
    n = len(tools)
    wide = np.int64 if n * width >= 2**31 else np.int32
    words = Words(wide)
    slots, tokens = occurrences((tool_fields(t, parameters=parameters) for t in tools), width, words)
    held = [np.concatenate(parts) if parts else np.zeros(0, wide) for parts in (slots, tokens)]
    del slots, tokens
    vocab = words.vocab
    return n, (vocab, *_postings(held, n, len(vocab), width, weights, k1, b))


def field_weights(given: Mapping[str, float]) -> tuple[float, ...]:
    """``given`` over the defaults, in ``FIELDS`` order."""
    merged = {**DEFAULT_FIELD_WEIGHTS, **given}
    return tuple(float(merged[f]) for f in FIELDS)
