"""search-ranking: grammar, determinism, fusion, priors, index reuse, hooks, config."""

from __future__ import annotations

import logging
import random
import types
from collections.abc import Sequence
from pathlib import Path

import anyio
import jsonschema
import pytest

from greenroom import (
    Plugin,
    Ranking,
    ScoredTool,
    SearchQuery,
    ToolDescriptor,
    ToolPriors,
    build_runtime,
    hookimpl,
    make_plugin_host,
)
from greenroom.config import ConfigError, structure_plugin_config
from greenroom.search import keyword_scores
from greenroom.tools import FunctionTool
from greenroom_ranking import CompositeRanking, RankingConfig, RankingEngine, SearchRankingPlugin, fuse, prior_boost
from greenroom_ranking.fusion import cut, shared_ranks
from greenroom_ranking.rankers import BUILDERS
from greenroom_ranking.text import analyze, keywords_form, split_identifier


def d(name: str, description: str, group: str | None = None, **params: str) -> ToolDescriptor:
    props = {k: {"type": "string", "description": v} for k, v in params.items()}
    return ToolDescriptor(name, description, {"type": "object", "properties": props}, group)


CATALOG = [
    d("github__create_issue", "Create a new issue in a GitHub repository", "github", title="Issue title"),
    d("github__list_issues", "List issues of a GitHub repository", "github", state="open or closed"),
    d("github__create_pull_request", "Open a pull request", "github", base="Branch to merge into"),
    d("getWeatherForecast", "Weather forecast for a city", "weather", city="City name"),
    d("getAirQuality", "Air quality index for a city", "weather", city="City name"),
    d("send_email", "Send an email message to a recipient", "mail", to="Recipient address"),
    d("search_email", "Search the mailbox for messages", "mail", query="Words to find"),
    d("translate_text", "Translate text into another language", None, target_language="ISO code"),
]


def q(text: str, n: int = 5) -> SearchQuery:
    return SearchQuery.parse(text, max_results=n)


def names(results: Sequence[ScoredTool]) -> list[str]:
    return [s.name for s in results]


# ----------------------------------------------------------------------------- text


def test_identifier_splitting_covers_common_naming_styles() -> None:
    assert split_identifier("getWeatherForecast") == ["get", "weather", "forecast"]
    assert split_identifier("github__create_pull_request") == ["github", "create", "pull", "request"]
    assert split_identifier("parseHTTPResponse2") == ["parse", "http", "response", "2"]
    assert split_identifier("list-pull-requests") == ["list", "pull", "requests"]
    assert analyze("Tell me the weather forecasts") == ["weather", "forecast"]


def test_keywords_form_keeps_first_content_words() -> None:
    assert keywords_form("Tell me the water quality of the lake.") == "water quality lake"
    assert keywords_form("Can I find academic research papers on this topic?", 4) == "find academic research papers"


# ----------------------------------------------------------------------------- rankers


def test_default_ranker_finds_tools_by_split_names_and_parameters() -> None:
    engine = RankingEngine(RankingConfig())
    assert names(engine.search(q("weather forecast"), CATALOG))[0] == "getWeatherForecast"
    assert names(engine.search(q("open a pull request"), CATALOG))[0] == "github__create_pull_request"
    # "language" appears only in a parameter name of translate_text
    assert names(engine.search(q("target language", 1), CATALOG)) == ["translate_text"]


def test_required_terms_filter_every_ranker() -> None:
    engine = RankingEngine(RankingConfig())
    got = names(engine.search(q("+github issue"), CATALOG))
    assert got and all(n.startswith("github__") for n in got)
    # +required must be in name or description of each result, whatever the other words say
    got = names(engine.search(q("+email weather forecast city"), CATALOG))
    assert set(got) <= {"send_email", "search_email"} and got
    assert engine.search(q("+nonexistent weather"), CATALOG) == []


def test_max_results_and_config_cap_are_honoured() -> None:
    assert len(RankingEngine(RankingConfig()).search(q("github issue pull request", 2), CATALOG)) == 2
    capped = RankingEngine(RankingConfig(max_results=1))
    assert len(capped.search(q("github issue pull request", 5), CATALOG)) == 1


def test_ties_are_broken_by_name_whatever_the_catalog_order() -> None:
    tools = [d(f"tool_{c}", "does the same thing") for c in "dbeac"]
    for ranker in ("keyword", "bm25", "bm25-plain"):
        for order in (tools, tools[::-1], random.Random(4).sample(tools, len(tools))):
            engine = RankingEngine(RankingConfig(rankers=(ranker,)))
            assert names(engine.search(q("same thing"), order)) == ["tool_a", "tool_b", "tool_c", "tool_d", "tool_e"]


def test_keyword_index_matches_core_keyword_scores() -> None:
    rng = random.Random(7)
    vocab = ["issue", "git", "create", "mail", "e", "a", "city", "weather", "+github", "text", "QUALITY", "xyz"]
    index = BUILDERS["keyword"](CATALOG, RankingConfig(keyword_band=0.0, keyword_stop_words=False))
    for _ in range(200):
        text = " ".join(rng.sample(vocab, rng.randint(1, 4)))
        query = q(text, 50)
        expected = [(s.name, s.score) for s in keyword_scores(query, CATALOG)]
        assert [(s.name, s.score) for s in index.search(query, None, 50)] == expected, text
    exact = q("send_email", 50)
    assert index.search(exact, None, 50)[0] == ScoredTool("send_email", 103.0)


def test_keyword_ranker_keeps_the_top_band() -> None:
    engine = RankingEngine(RankingConfig(rankers=("keyword",)))
    got = engine.search(q("create issue", 10), CATALOG)
    # create and issue both in the name (6) beat issue in the name only (3): half of 6 is 3
    assert got[0] == ScoredTool("github__create_issue", 6.0)
    assert all(s.score >= 3 for s in got)


# ----------------------------------------------------------------------------- fusion


def test_shared_ranks_and_rrf_math() -> None:
    a = Ranking("a", (ScoredTool("x", 3), ScoredTool("y", 3), ScoredTool("z", 1)))
    b = Ranking("b", (ScoredTool("z", 9), ScoredTool("x", 1)))
    assert shared_ranks(a.results) == [1, 1, 3]
    fused = {s.name: s.score for s in fuse([a, b], method="rrf", k=60)}
    assert fused["x"] == pytest.approx(1 / 61 + 1 / 62)
    assert fused["y"] == pytest.approx(1 / 61)
    assert fused["z"] == pytest.approx(1 / 63 + 1 / 61)
    weighted = {s.name: s.score for s in fuse([a, b], method="weighted", weights={"a": 2.0, "b": 1.0})}
    assert weighted == pytest.approx({"x": 2.0 + 1 / 9, "y": 2.0, "z": 2 / 3 + 1.0})
    assert names(fuse([a, b], method="rrf", weights={"b": 0.0})) == ["x", "y", "z"]


def test_prior_boost_and_cut() -> None:
    scored = [ScoredTool("a", 1.0), ScoredTool("b", 0.95), ScoredTool("c", 0.2)]
    boosted = prior_boost(scored, lambda n: {"b": 0.5}.get(n, 0.0), 0.5)
    assert names(boosted) == ["b", "a", "c"]
    assert names(cut(scored, 0.5, 5)) == ["a", "b"]
    assert names(cut(scored, 0.0, 2)) == ["a", "b"]


@pytest.mark.anyio
async def test_prior_boost_reorders_an_ambiguous_query_through_the_hooks() -> None:
    plugin = SearchRankingPlugin()
    query = q("email")  # send_email and search_email both match it equally well
    ranking = await plugin.greenroom_rank_tools(None, query, CATALOG)
    assert ranking is not None
    plain = plugin.greenroom_search_tools(None, query, CATALOG, [ranking])
    assert plain is not None and names(plain)[:2] == ["send_email", "search_email"]
    ctx = types.SimpleNamespace(priors=ToolPriors(p={"search_email": 0.6}))
    boosted = plugin.greenroom_search_tools(ctx, query, CATALOG, [ranking])  # type: ignore[arg-type]
    assert boosted is not None and names(boosted)[:2] == ["search_email", "send_email"]
    # a clear winner is not overturned by a prior
    ctx = types.SimpleNamespace(priors=ToolPriors(p={"send_email": 1.0}), catalog=lambda: CATALOG)
    clear = plugin.greenroom_search_tools(ctx, q("weather forecast"), CATALOG, [])  # type: ignore[arg-type]
    assert clear is not None and names(clear)[0] == "getWeatherForecast"


@pytest.mark.anyio
async def test_select_and_browse_queries_are_left_to_the_caller() -> None:
    plugin = SearchRankingPlugin()
    for text in ("select:send_email", ""):
        query = q(text)
        assert await plugin.greenroom_rank_tools(None, query, CATALOG) is None
        assert plugin.greenroom_search_tools(None, query, CATALOG, []) is None


# ----------------------------------------------------------------------------- index reuse


def test_indexes_are_built_once_per_catalog_not_per_query() -> None:
    engine = RankingEngine(RankingConfig())
    for text in ("weather", "email", "pull request", "+github issue"):
        engine.search(q(text), list(CATALOG))  # a fresh list each time, like the runtime
    # the keyword ranker's part is the catalog's text index
    assert engine.cache.builds == {"text": 1, "bm25": 1}
    # a subset (tools still deferred, hidden tools removed) reuses the same index
    subset = CATALOG[2:]
    assert "github__create_issue" not in names(engine.search(q("create issue", 10), subset))
    assert engine.cache.builds == {"text": 1, "bm25": 1}
    # a group loads: new tools, one rebuild, then reuse again
    grown = [*CATALOG, d("billing__refund", "Refund an invoice", "billing")]
    assert names(engine.search(q("refund invoice"), grown))[0] == "billing__refund"
    engine.search(q("invoice"), grown)
    assert engine.cache.builds == {"text": 2, "bm25": 2}
    # a tool whose description changed under the same name is re-indexed
    changed = [*CATALOG[:-1], d("translate_text", "Convert currencies")]
    assert names(engine.search(q("currencies", 1), changed)) == ["translate_text"]
    assert engine.cache.builds == {"text": 3, "bm25": 3}


# ----------------------------------------------------------------------------- hooks and host


class FavouriteRanker(Plugin):
    """A third-party ranker that always puts one tool first."""

    name = "favourite"

    @hookimpl
    def greenroom_rank_tools(
        self, ctx: object, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> Ranking | None:
        return Ranking("favourite", (ScoredTool("translate_text", 1.0),))


def _tools() -> list[FunctionTool]:
    return [FunctionTool(lambda: None, desc) for desc in CATALOG]


@pytest.mark.anyio
async def test_third_party_ranker_changes_the_fused_result(make_runtime) -> None:  # type: ignore[no-untyped-def]
    alone = make_runtime(tools=_tools(), plugins=[SearchRankingPlugin()])
    results, rankings = await alone.search(q("email message"), CATALOG)
    assert "translate_text" not in names(results)
    assert [r.ranker for r in rankings] == ["search-ranking"]
    assert isinstance(rankings[0], CompositeRanking) and [p.ranker for p in rankings[0].parts] == ["keyword", "bm25"]

    config = RankingConfig(weights={"keyword": 0.3, "bm25": 1.0, "favourite": 5.0})
    both = make_runtime(tools=_tools(), plugins=[SearchRankingPlugin(config), FavouriteRanker()])
    results, rankings = await both.search(q("email message"), CATALOG)
    assert names(results)[0] == "translate_text"
    assert sorted(r.ranker for r in rankings) == ["favourite", "search-ranking"]


@pytest.mark.anyio
async def test_third_party_rankings_respect_candidates_and_required(make_runtime) -> None:  # type: ignore[no-untyped-def]
    runtime = make_runtime(tools=_tools(), plugins=[SearchRankingPlugin(), FavouriteRanker()])
    results, _ = await runtime.search(q("+email message"), CATALOG)
    assert "translate_text" not in names(results)
    results, _ = await runtime.search(q("text"), CATALOG[:3])
    assert "translate_text" not in names(results)


def test_plugin_is_installed_through_its_entry_point() -> None:
    host = make_plugin_host(enable=["search-ranking"])
    assert isinstance(host.plugin("search-ranking"), SearchRankingPlugin)


# ----------------------------------------------------------------------------- config


def test_config_schema_and_structuring() -> None:
    schema = SearchRankingPlugin.config_schema()
    jsonschema.validate({"rankers": ["bm25"], "fusion": "rrf", "weights": {"my-ranker": 2}}, schema)
    for bad in ({"rankers": ["nope"]}, {"fusion": "max"}, {"min_score_ratio": 2}, {"rankers": []}, {"x": 1}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
    cfg = structure_plugin_config("search-ranking", RankingConfig, {"rankers": ["bm25"], "prior_weight": 0}, {})
    assert cfg == RankingConfig(rankers=("bm25",), prior_weight=0.0)
    with pytest.raises((ConfigError, ValueError)):
        structure_plugin_config("search-ranking", RankingConfig, {"rankers": ["nope"]}, {})


def test_a_config_with_the_removed_side_build_key_loads_and_warns_that_it_does_nothing(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    config = tmp_path / "agent.toml"
    config.write_text(
        '[agent]\nmodel = "scripted"\n\n[plugins.search-ranking]\nparallel_build_min_tools = 50000\nbm25_k1 = 1.5\n',
        encoding="utf-8",
    )
    with caplog.at_level(logging.WARNING, logger="greenroom_ranking"):
        rt = build_runtime(config)
    try:
        assert rt.host.plugin("search-ranking").config == RankingConfig(bm25_k1=1.5)  # the rest is read
    finally:
        anyio.run(rt.aclose)
    (warning,) = [r.getMessage() for r in caplog.records if "parallel_build_min_tools" in r.getMessage()]
    assert warning.startswith("plugins.search-ranking.parallel_build_min_tools no longer does anything")
    assert "greenroom rank index" in warning
