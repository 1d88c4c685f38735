"""The BM25F build's fast paths read what the plain ones do: ``cut`` gives the words the
regular expression finds (ASCII cut as bytes, other text by the expression), the postings
built on it are bit for bit those built on the expression alone, and the schema walk
reads the parameters a plain recursive walk reads, in its order."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any
from unittest import mock

import numpy as np
from hypothesis import example, given, settings
from hypothesis import strategies as st

from greenroom import ToolDescriptor
from greenroom_ranking.analysis import fields, occurrences
from greenroom_ranking.analysis.fields import field_weights, fielded_postings, tool_fields, weighted_postings
from greenroom_ranking.analysis.words import PIECES, cut
from greenroom_ranking.text import analyze_documents

PROPERTY = settings(max_examples=150, deadline=None)

# ASCII word characters, the underscore and punctuation the cut turns into spaces (with
# "?", the mark the cut gives other characters), the separator and other ASCII control
# characters (``str.split`` would split at 0x1c-0x1f, ``bytes.split`` does not), and
# characters that are letters or digits only in Unicode (accents, an Arabic-Indic digit,
# a titlecase letter, CJK, an astral letter), Unicode spaces, a combining mark (no word
# character) and a lone surrogate (a JSON escape)
ASCII = list("aZq09_ -.:/?\t\n\x1f\x1c\x1e")
OTHER = list("é߀٣ǅ中𝐀\u00a0\u2028\u0301\ud800")
IDENTIFIERS = ["getHTTPResponse2", "list_APIs", "userId", "URLs", "v2Beta", "snake_case_name", "ID"]


def _texts(alphabet: list[str]) -> st.SearchStrategy[str]:
    pieces = st.one_of(st.text(st.sampled_from(alphabet), max_size=8), st.sampled_from(IDENTIFIERS))
    return st.lists(pieces, max_size=6).map("".join)


texts = st.one_of(_texts(ASCII), _texts(ASCII + OTHER))


def regex_cut(texts: Sequence[str]) -> list[bytes]:
    """The words of ``texts`` the plain way: the expression over the joined texts."""
    joined = "\x1f".join(t.replace("\x1f", " ") for t in texts)
    return [word.encode() for word in PIECES.findall(joined)]


@PROPERTY
@given(st.lists(texts, max_size=8))
def test_cut_finds_the_words_the_regular_expression_finds(given_texts: list[str]) -> None:
    owned = list(given_texts)
    assert cut(owned) == regex_cut(given_texts)
    assert owned == []  # dropped once joined


def test_cut_keeps_unicode_letters_and_splits_at_what_is_no_letter() -> None:
    got = cut(["getUser_id2", "café\u00a0naïve—x", "", "a\x1fb"])
    assert got == [b"getUser", b"id2", b"\x1f", "café".encode(), "naïve".encode(), b"x", b"\x1f", b"\x1f", b"a", b"b"]


# schemas: properties nested in properties and array items, beyond the walk's depth, with
# the odd values real catalogs hold (no dict, a description that is no string, enum
# values of every JSON type)
enum_values = st.lists(st.one_of(st.text(max_size=4), st.integers(), st.floats(allow_nan=False), st.booleans()))
leaf = st.fixed_dictionaries(
    {}, optional={"description": st.one_of(texts, st.integers()), "enum": st.one_of(enum_values, st.text(max_size=3))}
)
schemas = st.recursive(
    leaf,
    lambda inner: st.one_of(
        st.fixed_dictionaries(
            {"properties": st.dictionaries(st.sampled_from(IDENTIFIERS), st.one_of(inner, st.none()))}
        ),
        st.fixed_dictionaries({"type": st.just("array"), "items": inner}),
        st.fixed_dictionaries(
            {"properties": st.dictionaries(st.text(max_size=5), inner, min_size=1, max_size=3)},
            optional={"items": inner},
        ),
        inner.map(MappingProxyType),  # a mapping that is no dict
    ),
    max_leaves=12,
)
NESTED = {
    "properties": {
        "tags": {"type": "array", "items": {"properties": {"label": {"description": "A tag's label"}}}},
        "owner": {"properties": {"id": {"enum": ["me", 3, True, None]}, "deep": {"properties": {"x": {}}}}},
        "after": None,
    }
}


def plain_walk(schema: Any, out: tuple[list[str], list[str], list[str]], depth: int = 0) -> None:
    """Parameter names, descriptions and enum values to depth 3, one schema per call."""
    if not isinstance(schema, Mapping) or depth > 3 or not isinstance(schema.get("properties"), Mapping):
        return
    for name, spec in schema["properties"].items():
        out[0].append(str(name))
        if not isinstance(spec, Mapping):
            continue
        if isinstance(spec.get("description"), str):
            out[1].append(spec["description"])
        if isinstance(spec.get("enum"), list):
            out[2].extend(str(v) for v in spec["enum"][: fields.ENUM_VALUES] if isinstance(v, (str, int, float)))
        plain_walk(spec, out, depth + 1)
        plain_walk(spec.get("items"), out, depth + 1)


@PROPERTY
@given(schemas)
@example(NESTED)
@example(MappingProxyType(NESTED))
def test_the_schema_walk_reads_what_a_plain_recursive_walk_reads(schema: dict[str, Any]) -> None:
    out: tuple[list[str], list[str], list[str]] = ([], [], [])
    plain_walk(schema, out)
    got = tool_fields(ToolDescriptor("t", "d", schema))
    assert got[2:5] == tuple("\n".join(part) for part in out)


tools = st.lists(
    st.builds(ToolDescriptor, texts, texts, schemas, group=st.one_of(st.none(), texts)), min_size=1, max_size=7
)


@PROPERTY
@given(tools, st.integers(1, 4), st.booleans())
def test_postings_built_on_the_fast_cut_are_those_of_the_regular_expression(
    catalog: list[ToolDescriptor], batch: int, parameters: bool
) -> None:
    weights = field_weights({})
    with mock.patch.object(occurrences, "BATCH", batch):  # new words in most batches
        size, fast = fielded_postings(catalog, weights, 1.2, 0.75, parameters=parameters)
        with mock.patch.object(occurrences, "cut", regex_cut):
            _, plain = fielded_postings(catalog, weights, 1.2, 0.75, parameters=parameters)
    # and the plain build: every text analysed alone, every occurrence counted in Python
    nested = [
        [analyze_documents([t], joined=True)[0] for t in tool_fields(tool, parameters=parameters)] for tool in catalog
    ]
    assert size == len(catalog)
    for other in (plain, weighted_postings(nested, weights, 1.2, 0.75)):
        assert list(fast[0].items()) == list(other[0].items())  # ids in the same order
        for got, want in zip(fast[1:], other[1:], strict=True):
            assert got.dtype == want.dtype
            assert np.array_equal(got, want)


@PROPERTY
@given(
    st.lists(st.tuples(st.integers(0, 5), st.integers(0, 2), st.integers(0, 7)), max_size=40),
    st.lists(st.floats(0, 3), min_size=3, max_size=3),
    st.sampled_from([1, 2, 5, 1 << 18]),
)
def test_occurrence_postings_are_bm25f_summed_in_occurrence_order(
    occurrences: list[tuple[int, int, int]], weights: list[float], chunk: int
) -> None:
    # occurrence: (tool, field, token), in tool and field order as the build makes them
    n, width, size, k1, b = 6, 3, 8, 1.2, 0.75
    occurrences.sort(key=lambda o: (o[0], o[1]))
    slot = np.array([t * width + f for t, f, _ in occurrences], dtype=np.int32)
    token = np.array([k for *_, k in occurrences], dtype=np.int32)
    with mock.patch.object(fields, "CHUNK", chunk):  # sorted, summed and scored a chunk at a time
        data, indices, indptr = fields.occurrence_postings(slot, token, n, size, width, weights, k1, b)
    # each tool's weighted length and their mean as the build computes them: what is
    # checked here is the sums and scores over the sorted occurrences
    counts = np.zeros((n, width))
    for tool, f, _ in occurrences:
        counts[tool, f] += 1
    length = counts @ np.array(weights)
    mean = float(length.mean())
    tf: dict[tuple[int, int], float] = {}
    for tool, f, k in occurrences:
        if weights[f] > 0:
            tf[k, tool] = tf.get((k, tool), 0.0) + weights[f] / (1 - b + b * length[tool] / max(mean, 1e-9))
    got = {(k, int(indices[j])): float(data[j]) for k in range(size) for j in range(indptr[k], indptr[k + 1])}
    df = [sum(1 for k, _ in tf if k == term) for term in range(size)]
    want = {
        (k, tool): float(np.float32(np.log1p((n - df[k] + 0.5) / (df[k] + 0.5)) * v / (k1 + v)))
        for (k, tool), v in sorted(tf.items())
    }
    assert got == want
    assert list(got) == sorted(want)  # token-major, tools ascending
