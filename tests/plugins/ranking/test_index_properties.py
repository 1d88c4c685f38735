"""Properties of the index machinery, on random catalogs: the substring index finds what
``in`` finds, the keyword ranker scores what core's ``keyword_scores`` scores, the cut
to the best results orders as ``sort_scored`` does, and a search over a subset of the
catalog is the whole catalog's ranking restricted to the subset."""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenroom import ScoredTool, SearchQuery, ToolDescriptor
from greenroom.kit import sort_scored
from greenroom.search import keyword_scores
from greenroom_ranking import RankingConfig, RankingEngine, substrings
from greenroom_ranking.cache import forget
from greenroom_ranking.index import top_scored
from greenroom_ranking.rankers import BUILDERS
from greenroom_ranking.substrings import SubstringIndex

PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

# short words from a small alphabet (accents, CJK, an astral character, separators), so
# terms often hit, overlap and cross UTF-8 byte boundaries
letters = st.sampled_from(list("abcaé中𝄞_-.Q"))
words = st.text(letters, min_size=1, max_size=11)
texts = st.lists(words, max_size=5).map(" ".join)
terms = st.text(letters, min_size=1, max_size=12)


@PROPERTY
@given(st.lists(texts, max_size=25), st.lists(terms, min_size=1, max_size=6), st.integers(1, 30))
def test_the_substring_index_finds_what_in_finds(corpus: list[str], probes: list[str], batch: int) -> None:
    with mock.patch.object(substrings, "_BATCH", batch):  # texts read this many at a time, from an iterator
        built = SubstringIndex.build(iter(corpus))
    assert built.size == len(corpus)
    stored = SubstringIndex.from_arrays(built.to_arrays("x"), "x")
    for term in [*probes, *(w for t in corpus for w in t.split()[:1])]:
        expected = [i for i, text in enumerate(corpus) if term in text]
        assert built.ids(term).tolist() == expected
        assert stored.ids(term).tolist() == expected
        exact = built.exact_chunk(term)
        vocab = list(dict.fromkeys(w for text in corpus for w in text.split()))
        assert exact == (vocab.index(term) if term in vocab else None)
    # all at once (a term twice, the empty term) as each alone
    many = [*probes, probes[0], ""]
    assert [ids.tolist() for ids in stored.ids_many(many)] == [built.ids(t).tolist() for t in many]


# every kind of whitespace str.split splits on (the file separators \x1c-\x1f, NEL, NBSP,
# Unicode spaces), NULs (what the batch build joins texts with), a lone surrogate, a
# zero-width space (not whitespace) and non-ASCII letters
tricky = st.sampled_from(
    [
        *"aé中𝄞_.",
        "\x00",
        "\x00\x00",
        " ",
        "\t",
        "\n",
        "\x1c",
        "\x1f",
        "\x85",
        "\xa0",
        "\u2028",
        "\u3000",
        "\ud800",
        "\u200b",
    ]
)
tricky_texts = st.lists(tricky, max_size=14).map("".join) | st.lists(tricky, max_size=6).map(lambda t: " ".join(t * 3))


def plain_index(corpus: list[str]) -> dict[str, list[int]]:
    """The arrays the module doc describes, built a text and a suffix at a time."""
    vocab: dict[str, list[int]] = {}  # each distinct chunk, first seen first, with its texts
    for i, text in enumerate(corpus):
        for chunk in dict.fromkeys(text.split()):
            vocab.setdefault(chunk, []).append(i)
    data = "".join(f"{c}\n" for c in vocab).encode("utf-8", "surrogatepass")
    starts = [p for p in range(len(data)) if data[p] != 10]
    # each suffix's first 8 bytes, sorted; equal ones by position
    suffixes = sorted(starts, key=lambda p: (data[p : p + 8].ljust(8, b"\0"), p))
    sizes = [len(texts) for texts in vocab.values()]
    return {
        "size": [len(corpus)],
        "data": list(data),
        "keys": [int.from_bytes(data[p : p + 8].ljust(8, b"\0"), "big") for p in suffixes],
        "position": suffixes,
        "chunk": [data.count(b"\n", 0, p) for p in suffixes],
        "offsets": [sum(sizes[:c]) for c in range(len(sizes) + 1)],
        "postings": [i for texts in vocab.values() for i in texts],
    }


@PROPERTY
@given(st.lists(tricky_texts, max_size=12), st.integers(1, 5))
def test_the_index_built_a_batch_at_a_time_is_the_one_built_a_text_at_a_time(corpus: list[str], batch: int) -> None:
    """Texts split together (joined by a separator no text holds) give each text's
    chunks exactly as splitting it alone does, and the radix-sorted suffix table is the
    one a plain sort gives: every stored array as the plain build's."""
    with mock.patch.object(substrings, "_BATCH", batch):
        arrays = SubstringIndex.build(iter(corpus)).to_arrays("x")
    assert {k: arrays[f"x.{k}"].tolist() for k in substrings._FIELDS} == plain_index(corpus)
    assert arrays["x.keys"].dtype == np.uint64 and arrays["x.data"].dtype == np.uint8


def test_suffixes_with_equal_keys_stay_in_position_order() -> None:
    """Many suffixes share their first 8 bytes (tools named alike): the suffix table
    keeps them in position order, as the plain build's sort does, at a size where an
    unstable sort would not."""
    corpus = [f"{'ab' * 6}{i % 7} {'é' * 5}{i}_{'x' * 9}" for i in range(300)]
    arrays = SubstringIndex.build(corpus).to_arrays("x")
    assert {k: arrays[f"x.{k}"].tolist() for k in substrings._FIELDS} == plain_index(corpus)


VOCAB = ["issue", "git", "create", "mail", "e", "city", "weather", "text", "quality", "xyz", "Ünï", "中文"]
names_ = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map("_".join)
descriptions = st.lists(st.sampled_from([*VOCAB, "The", "of", "GitHub"]), max_size=6).map(" ".join)


@st.composite
def catalogs(draw: st.DrawFn, max_size: int = 30) -> list[ToolDescriptor]:
    names = draw(st.lists(names_, min_size=1, max_size=max_size, unique=True))
    return [ToolDescriptor(n, draw(descriptions)) for n in names]


queries = st.lists(st.sampled_from([*VOCAB, "+git", "+e", "the", "create_issue"]), min_size=1, max_size=4).map(" ".join)


@PROPERTY
@given(catalogs(), queries)
def test_the_keyword_ranker_scores_as_core_does(tools: list[ToolDescriptor], text: str) -> None:
    index = BUILDERS["keyword"](tools, RankingConfig(keyword_band=0.0, keyword_stop_words=False))
    query = SearchQuery.parse(text, max_results=100)
    expected = [(s.name, s.score) for s in keyword_scores(query, tools)]
    assert [(s.name, s.score) for s in index.search(query, None, 100)] == expected
    whole = tools[0].name  # the whole query is a tool's name: +100
    assert index.search(SearchQuery.parse(whole), None, 1)[0].name == whole


@PROPERTY
@given(st.lists(st.sampled_from([0.0, 0.5, 1.0, 2.0, 3.0, -1.0]), max_size=60), st.integers(1, 20), st.randoms())
def test_the_best_results_are_ordered_as_sort_scored_orders_them(scores: list[float], depth: int, rnd: object) -> None:
    names = [f"tool_{i:03d}" for i in range(len(scores))]
    rnd.shuffle(names)  # type: ignore[attr-defined]
    ranks = np.empty(len(names), dtype=np.int64)
    ranks[np.argsort(np.asarray(names, dtype=str))] = np.arange(len(names))
    expected = sort_scored([ScoredTool(n, s) for n, s in zip(names, scores, strict=True) if s > 0])[:depth]
    assert top_scored(names, np.asarray(scores), depth, ranks) == expected


@PROPERTY
@given(catalogs(), st.data())
def test_a_search_over_a_subset_is_the_whole_ranking_restricted_to_it(
    tools: list[ToolDescriptor], data: st.DataObject
) -> None:
    forget()  # an earlier example may have made this very catalog
    engine = RankingEngine(RankingConfig(keyword_band=0.0, depth=1000, index_cache=False))
    keep = data.draw(st.lists(st.booleans(), min_size=len(tools), max_size=len(tools)))
    subset = [t for t, k in zip(tools, keep, strict=True) if k]
    kept = {t.name for t in subset}
    engine.prepare(tools)  # the index is the whole catalog's
    for _ in range(3):
        query = SearchQuery.parse(data.draw(queries), max_results=100)
        whole = engine.rank(query, tools)
        part = engine.rank(query, subset)
        for w, p in zip(whole.parts, part.parts, strict=True):
            assert list(p.results) == [s for s in w.results if s.name in kept]
        final = [s.name for s in engine.search(query, subset)]
        assert set(final) <= kept
    assert engine.cache.builds == {"text": 1, "bm25": 1}  # every subset reused the one index


@PROPERTY
@given(
    docs=st.lists(st.lists(words, max_size=6), min_size=1, max_size=20),
    query=st.lists(words, min_size=1, max_size=4),
)
def test_the_bm25_table_scores_as_bm25s_does_over_the_same_tokens(docs: list[list[str]], query: list[str]) -> None:
    """The table hands bm25s token ids it numbered itself (no second copy of the corpus);
    every tool's score for any query is bm25s' own, bit for bit."""
    import bm25s

    from greenroom_ranking.rankers import BM25Table

    corpus = [d or [""] for d in docs]
    table = BM25Table.build([list(d) for d in corpus], 1.5, 0.75)
    plain = bm25s.BM25(k1=1.5, b=0.75)
    plain.index([list(d) for d in corpus], show_progress=False)
    tokens = [t for t in dict.fromkeys(query) if t in plain.vocab_dict and t]
    ours = table.scores(list(dict.fromkeys(query)))
    if not tokens:
        assert ours is None or not ours.any()
        return
    theirs = plain.get_scores(tokens)
    assert ours is not None and np.array_equal(ours, theirs.astype(ours.dtype))


@PROPERTY
@given(
    st.lists(
        st.sampled_from(["Weather", "forecasts", "the", "getUserID", "v2", "API_key", "中文", "YouTube", "NOTAMs"]),
        max_size=8,
    )
)
def test_a_query_is_analysed_as_its_whole_text_is_whatever_was_asked_before(words_: list[str]) -> None:
    """BM25 analyses each query word once per process; the tokens are ``analyze`` of the
    whole text, repeats and stop words included (with ``joined``, as the fielded table's
    documents were analysed)."""
    from greenroom_ranking.corpus import RankingCorpus
    from greenroom_ranking.rankers import BM25Index
    from greenroom_ranking.text import analyze

    text = " ".join(words_)
    for joined in (False, True):
        index = BM25Index(RankingCorpus([]), None, joined=joined)  # type: ignore[arg-type]  # no table is read
        assert index.query_tokens(text) == analyze(text, joined=joined)
        assert index.query_tokens(text) == analyze(text, joined=joined)  # now remembered


@PROPERTY
@given(
    st.lists(st.integers(0, 2**17 - 1), max_size=200),
    st.integers(0, 2**16 - 1),
    st.lists(st.sampled_from([0, 1, 2**16, 2**40 + 7, 2**63 + 5, 2**64 - 1]) | st.integers(0, 2**64 - 1), max_size=200),
)
def test_the_radix_stable_sort_orders_as_numpys_stable_sort(values: list[int], small: int, huge: list[int]) -> None:
    """Sorted a 16-bit digit at a time, equal values (drawn often) keep their order."""
    wide = np.asarray(values, dtype=np.int32)
    narrow = wide % (small + 1)  # below 2**16: sorted by radix as 16-bit values
    keys = np.asarray(huge, dtype=np.uint64)
    swapped = keys.astype(keys.dtype.newbyteorder())  # a foreign byte order: the same values
    cases = ((wide, 2**17), (narrow, small + 1), (wide.astype(np.int64), 2**17), (keys, 2**64), (swapped, 2**64))
    for array, bound in cases:
        assert substrings.stable_order(array, bound).tolist() == np.argsort(array, kind="stable").tolist()
