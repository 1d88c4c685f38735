"""``greenroom rank eval``: metrics on a handmade catalog, the CLI, and the shared datasets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import typer
from support.gr_testutil import DATASETS, plugin_cli
from typer.testing import CliRunner

from greenroom_ranking import SearchRankingPlugin
from greenroom_ranking.evaluate import (
    EvalQuery,
    all_gold_at,
    evaluate,
    load_queries,
    load_tools,
    ndcg_at,
    ranker_config,
    recall_at,
    reciprocal_rank,
    sample,
)

TOOLS = [
    {"name": "getWeather", "description": "Current weather for a city", "parameters": None, "group": "weather"},
    {"name": "getForecast", "description": "Weather forecast for days", "parameters": None, "group": "weather"},
    {"name": "sendEmail", "description": "Send an email", "parameters": None, "group": "mail"},
    {"name": "translateText", "description": "Translate text to a language", "parameters": None, "group": None},
]
QUERIES = [
    {"query": "What is the weather in Paris?", "gold": ["getWeather"]},
    {"query": "Send an email to Bob", "gold": ["sendEmail"]},
    {"query": "Translate this text and email it", "gold": ["translateText", "sendEmail"]},
    {"query": "quantum chromodynamics", "gold": ["getForecast"]},
]


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    tools, queries = tmp_path / "tools.jsonl", tmp_path / "queries.jsonl"
    tools.write_text("\n".join(json.dumps(t) for t in TOOLS) + "\n")
    queries.write_text("\n".join(json.dumps(q) for q in QUERIES) + "\n")
    return tools, queries


def test_metrics_by_hand() -> None:
    ranked = ["a", "g1", "b", "c", "d", "g2"]
    assert recall_at(ranked, ["g1", "g2"], 5) == 0.5
    assert recall_at(ranked, ["g1", "g2"], 10) == 1.0
    assert reciprocal_rank(ranked, ["g2", "g1"]) == 0.5
    assert all_gold_at(ranked, ["g1"], 5) == 1.0 and all_gold_at(ranked, ["g1", "g2"], 5) == 0.0
    import math

    ideal = 1 + 1 / math.log2(3)
    assert ndcg_at(ranked, ["g1", "g2"]) == pytest.approx((1 / math.log2(3) + 1 / math.log2(7)) / ideal)
    assert ndcg_at([], ["g"]) == 0.0


def test_sample_is_evenly_spaced_and_stable() -> None:
    items = [EvalQuery(str(i), ("x",)) for i in range(10)]
    assert [q.text for q in sample(items, 5)] == ["0", "2", "4", "6", "8"]
    assert sample(items, None) == items and sample(items, 50) == items


def test_evaluate_known_answers(files: tuple[Path, Path]) -> None:
    tools, queries = load_tools(files[0]), load_queries(files[1])
    result = evaluate(tools, queries, "bm25")
    # weather, email: first; translate+email: both in top 5; the last query matches nothing
    assert result.queries == 4
    assert result.recall_at_5 == pytest.approx(0.75)
    assert result.mrr == pytest.approx(0.75)
    assert result.all_gold_at_5 == pytest.approx(0.75)
    assert result.build_seconds >= 0 and result.p95_ms >= result.p50_ms >= 0


def test_ranker_specs() -> None:
    assert ranker_config("keyword+bm25").rankers == ("keyword", "bm25")
    assert ranker_config("bm25-plain").rankers == ("bm25-plain",)
    with pytest.raises(ValueError, match="unknown ranker"):
        ranker_config("nope")


def _app() -> typer.Typer:
    return plugin_cli(SearchRankingPlugin())  # type: ignore[no-any-return]


def test_cli_eval_json(files: tuple[Path, Path]) -> None:
    args = ["rank", "eval", "--tools", str(files[0]), "--queries", str(files[1]), "--json"]
    result = CliRunner().invoke(_app(), [*args, "--ranker", "bm25-plain", "--ranker", "default", "--limit", "3"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert data["tool_count"] == 4 and data["query_count"] == 3 and data["baseline"] == "bm25-plain"
    rows = {(r["ranker"], r["form"]): r for r in data["results"]}
    assert set(rows) == {(r, f) for r in ("bm25-plain", "default") for f in ("full", "keywords")}
    for row in rows.values():
        assert {
            "recall_at_5",
            "recall_at_10",
            "ndcg_at_10",
            "mrr",
            "all_gold_at_5",
            "build_seconds",
            "p50_ms",
            "p95_ms",
        } <= set(row)
    assert rows[("bm25-plain", "full")]["vs_baseline"]["recall_at_5"] == 1.0


def test_cli_eval_table_and_errors(files: tuple[Path, Path], tmp_path: Path) -> None:
    ok = CliRunner().invoke(
        _app(), ["rank", "eval", "--tools", str(files[0]), "--queries", str(files[1]), "--form", "full"]
    )
    assert ok.exit_code == 0 and "R@5" in ok.output
    bad = CliRunner().invoke(
        _app(), ["rank", "eval", "--tools", str(tmp_path / "missing.jsonl"), "--queries", str(files[1])]
    )
    assert bad.exit_code == 2
    bad = CliRunner().invoke(
        _app(), ["rank", "eval", "--tools", str(files[0]), "--queries", str(files[1]), "--ranker", "nope"]
    )
    assert bad.exit_code == 2


@pytest.mark.parametrize("dataset", ["seal_tools", "metatool"])
def test_default_beats_plain_bm25_and_is_no_worse_than_before_on_shared_datasets(dataset: str) -> None:
    folder = DATASETS / dataset
    if not (folder / "queries.jsonl").exists():
        pytest.skip(f"{folder} not present")
    tools, queries = load_tools(folder / "tools.jsonl"), load_queries(folder / "queries.jsonl", 300)
    for form in ("full", "keywords"):
        ours = evaluate(tools, queries, "default", form=form)
        base = evaluate(tools, queries, "bm25-plain", form=form)
        assert ours.recall_at_5 > base.recall_at_5, (dataset, form)
        before = evaluate(tools, queries, "default-v1", form=form)  # the default before 2026-11
        assert ours.recall_at_5 >= 0.99 * before.recall_at_5, (dataset, form)
