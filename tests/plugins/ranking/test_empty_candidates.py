"""Ranking nothing: every ranker, the fusion, the cut and the hooks answer an empty list
for an empty set of candidates (ToolSearch when every tool is eager), and build no index."""

from __future__ import annotations

import pytest

from greenroom import Ranking, ScoredTool, SearchQuery, ToolDescriptor
from greenroom_ranking import BUILTIN_RANKERS, RankingConfig, RankingEngine, SearchRankingPlugin, fuse, prior_boost
from greenroom_ranking.extra import missing_extra
from greenroom_ranking.fusion import cut, rrf, weighted
from greenroom_ranking.rankers import BUILDERS

LEXICAL = [r for r in BUILTIN_RANKERS if r != "embedding"]
RANKERS = LEXICAL if missing_extra() else list(BUILTIN_RANKERS)
QUERIES = ["weather", "+weather city", "get the weather forecast for rome"]


@pytest.mark.parametrize("ranker", LEXICAL)
@pytest.mark.parametrize("text", QUERIES)
def test_every_lexical_index_over_an_empty_catalog_finds_nothing(ranker: str, text: str) -> None:
    index = BUILDERS[ranker]([], RankingConfig())
    assert index.search(SearchQuery.parse(text), None, 10) == []


@pytest.mark.parametrize("fusion", ["rrf", "weighted"])
@pytest.mark.parametrize("rankers", [[r] for r in RANKERS] + [RANKERS])
@pytest.mark.parametrize("text", QUERIES)
def test_the_engine_ranks_no_candidates_without_building_anything(fusion: str, rankers: list[str], text: str) -> None:
    engine = RankingEngine(RankingConfig(rankers=tuple(rankers), fusion=fusion))
    query = SearchQuery.parse(text)
    ranking = engine.rank(query, [])
    assert ranking.results == () and [p.ranker for p in ranking.parts] == rankers
    assert engine.finish(query, [], [ranking, Ranking("third-party", (ScoredTool("ghost", 1.0),))], lambda n: 1.0) == []
    assert engine.search(query, []) == []
    assert engine.cache.builds == {}


def test_an_empty_candidate_set_after_a_real_catalog_finds_nothing() -> None:
    engine = RankingEngine(RankingConfig(rankers=tuple(LEXICAL)))
    catalog = [ToolDescriptor("weather_get", "Weather for a city.")]
    assert [s.name for s in engine.search(SearchQuery.parse("weather"), catalog)] == ["weather_get"]
    assert engine.search(SearchQuery.parse("weather"), []) == []


def test_fusion_and_cut_of_nothing_are_nothing() -> None:
    empty = [Ranking("keyword", ()), Ranking("bm25", ())]
    assert fuse([]) == [] and fuse([], method="weighted") == []
    assert fuse(empty) == [] and fuse(empty, method="weighted") == []
    assert fuse(empty[:1]) == []
    assert rrf(empty, lambda _: 1.0) == [] and weighted(empty, lambda _: 1.0) == []
    assert prior_boost([], lambda _: 1.0, 0.5) == []
    assert cut([], 0.5, 5) == [] and cut([], 0.0, 0) == []


@pytest.mark.anyio
async def test_the_hooks_answer_an_empty_list_for_no_candidates() -> None:
    plugin = SearchRankingPlugin(RankingConfig(rankers=tuple(LEXICAL)))
    query = SearchQuery.parse("weather")
    assert await plugin.greenroom_rank_tools(ctx=None, query=query, candidates=[]) is None
    assert plugin.greenroom_search_tools(ctx=None, query=query, candidates=[], rankings=[]) == []
