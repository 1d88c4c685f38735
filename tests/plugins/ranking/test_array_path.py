"""The engine ranks in arrays and makes ``ScoredTool``s only for what it answers with;
these properties hold it to the plain path it replaced: ``fuse`` over the rankers'
``ScoredTool`` rankings, the candidate filter, ``prior_boost`` and ``cut``. Same tools,
same scores (to the last bit), same order, for both fusion methods, priors and cutoffs."""

from __future__ import annotations

import copy
import pickle

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenroom import Ranking, ScoredTool, SearchQuery, ToolDescriptor
from greenroom.kit import passes_required, sort_scored
from greenroom_ranking import CompositeRanking, RankingConfig, RankingEngine, fuse, prior_boost
from greenroom_ranking.cache import forget
from greenroom_ranking.fusion import FusionMethod, RankedArrays, cut, fuse_arrays

PROPERTY = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

VOCAB = ["issue", "git", "create", "mail", "e", "city", "weather", "text", "quality", "xyz", "send", "list"]
names_ = st.lists(st.sampled_from(VOCAB), min_size=1, max_size=3).map("_".join)
descriptions = st.lists(st.sampled_from([*VOCAB, "The", "of", "GitHub", "a"]), max_size=8).map(" ".join)
queries = st.lists(st.sampled_from([*VOCAB, "+git", "+e", "the", "send_mail"]), min_size=1, max_size=5).map(" ".join)


@st.composite
def catalogs(draw: st.DrawFn) -> list[ToolDescriptor]:
    names = draw(st.lists(names_, min_size=1, max_size=40, unique=True))
    return [ToolDescriptor(n, draw(descriptions)) for n in names]


def plain_finish(
    engine: RankingEngine,
    query: SearchQuery,
    candidates: list[ToolDescriptor],
    parts: tuple[Ranking, ...],
    prior: object,
) -> list[ScoredTool]:
    """What ``finish`` did before it worked in arrays."""
    c = engine.config
    fused = fuse(parts, method=c.fusion, weights=c.weights, default_weight=c.default_weight, k=c.rrf_k, depth=c.depth)
    by_name = {t.name: t for t in candidates}
    eligible = [
        s
        for s in fused
        if s.name in by_name and (not query.required or passes_required(by_name[s.name], query.required))
    ]
    if prior is not None:
        eligible = prior_boost(eligible, prior, c.prior_weight)  # type: ignore[arg-type]
    limit = query.max_results if c.max_results is None else min(query.max_results, c.max_results)
    return cut(eligible, c.min_score_ratio, limit)


@PROPERTY
@given(
    catalogs(),
    st.data(),
    st.sampled_from(["weighted", "rrf"]),
    st.sampled_from([0.0, 0.5, 2.0]),
    st.sampled_from([0.0, 0.3, 0.9]),
    st.sampled_from([("keyword", "bm25"), ("bm25",), ("keyword", "bm25", "bm25-plain")]),
    st.integers(1, 30),
    st.integers(1, 8),
)
def test_a_search_answers_as_the_plain_path_does(
    tools: list[ToolDescriptor],
    data: st.DataObject,
    fusion: FusionMethod,
    prior_weight: float,
    ratio: float,
    rankers: tuple[str, ...],
    depth: int,
    limit: int,
) -> None:
    forget()
    config = RankingConfig(
        rankers=rankers,
        fusion=fusion,
        prior_weight=prior_weight,
        min_score_ratio=ratio,
        depth=depth,
        keyword_band=0.0,
        index_cache=False,
    )
    engine = RankingEngine(config)
    keep = data.draw(st.lists(st.booleans(), min_size=len(tools), max_size=len(tools)))
    subset = [t for t, k in zip(tools, keep, strict=True) if k] or tools
    # priors often tie (0 and 1 are common) and sometimes fall outside 0..1, which the boost clamps
    table = {t.name: data.draw(st.sampled_from([0.0, 0.0, 0.25, 1.0, 1.5, -0.5])) for t in tools}
    for prior in (None, table.__getitem__):
        query = SearchQuery.parse(data.draw(queries), max_results=limit)
        ranking = engine.rank(query, subset)
        parts = ranking.parts  # the rankers' own rankings, as ScoredTools
        got = engine.finish(query, subset, [ranking], prior)
        assert [(s.name, s.score) for s in got] == [
            (s.name, s.score) for s in plain_finish(engine, query, subset, parts, prior)
        ]
        # its results are the plain fusion of its parts
        c = config
        plain = fuse(parts, method=c.fusion, weights=c.weights, default_weight=c.default_weight, k=c.rrf_k, depth=depth)
        assert list(ranking.results) == plain


scores = st.lists(st.sampled_from([0.5, 1.0, 1.0, 2.0, 3.25, 0.1]), max_size=12)


@PROPERTY
@given(st.lists(scores, min_size=1, max_size=4), st.sampled_from(["weighted", "rrf"]), st.integers(1, 12))
def test_fusing_arrays_is_fusing_rankings(columns: list[list[float]], method: FusionMethod, depth: int) -> None:
    names = [f"t{i:02d}" for i in range(15)]
    ranks = np.arange(len(names))
    rng = np.random.default_rng(len(columns) * 7 + depth)
    parts = []
    for j, values in enumerate(columns):
        positions = rng.permutation(len(names))[: len(values)]
        order = np.lexsort((ranks[positions], -np.asarray(values, dtype=np.float32)))
        parts.append((f"r{j}", positions[order], np.asarray(values, dtype=np.float32)[order]))
    weights = {"r0": 1.0, "r1": 0.3, "r2": 0.0}
    positions, fused = fuse_arrays(parts, ranks, method=method, weights=weights, k=60.0, depth=depth)
    rankings = [
        Ranking(r, tuple(ScoredTool(names[i], float(v)) for i, v in zip(p, s, strict=True))) for r, p, s in parts
    ]
    expected = fuse(rankings, method=method, weights=weights, k=60.0, depth=depth)
    assert [(names[i], v) for i, v in zip(positions.tolist(), fused.tolist(), strict=True)] == [
        (s.name, s.score) for s in expected
    ]


def test_a_composite_made_from_arrays_is_an_ordinary_ranking() -> None:
    names = ["a", "b", "c"]
    arrays = RankedArrays(
        names,
        np.arange(3),
        object(),
        np.asarray([2, 0]),
        np.asarray([1.0, 0.5]),
        (("keyword", np.asarray([2]), np.asarray([3.0])), ("bm25", np.asarray([0, 2]), np.asarray([1.5, 1.0]))),
    )
    lazy = CompositeRanking.of_arrays("search-ranking", arrays)
    plain = CompositeRanking(
        "search-ranking",
        (ScoredTool("c", 1.0), ScoredTool("a", 0.5)),
        (
            Ranking("keyword", (ScoredTool("c", 3.0),)),
            Ranking("bm25", (ScoredTool("a", 1.5), ScoredTool("c", 1.0))),
        ),
    )
    assert lazy == plain and hash(lazy) == hash(plain) and repr(lazy) == repr(plain)
    assert list(lazy.results) == sort_scored(list(plain.results))
    for again in (copy.deepcopy(lazy), pickle.loads(pickle.dumps(lazy))):
        assert again == plain
    assert lazy != CompositeRanking("search-ranking", plain.results, plain.parts[:1])
