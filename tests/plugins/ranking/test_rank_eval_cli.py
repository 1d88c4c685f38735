"""``greenroom rank eval`` reads well at 80 columns and in a pipe, and a partial
``weights`` table keeps the default weights of the rankers it does not name."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import typer
from support.gr_testutil import DATASETS, plugin_cli
from typer.testing import CliRunner

from greenroom_ranking import SearchRankingPlugin
from greenroom_ranking.config import RankingConfig

DATA = DATASETS / "metatool"
runner = CliRunner()


def cli() -> typer.Typer:
    return plugin_cli(SearchRankingPlugin())  # type: ignore[no-any-return]


@pytest.mark.skipif(not DATA.exists(), reason="../shared/datasets not present")
def test_rank_eval_numbers_and_names_are_whole_at_80_columns() -> None:
    args = ["rank", "eval", "--tools", str(DATA / "tools.jsonl"), "--queries", str(DATA / "queries.jsonl")]
    result = runner.invoke(
        cli(), [*args, "--limit", "30", "--ranker", "bm25-plain", "--ranker", "default"], env={"COLUMNS": "80"}
    )
    assert result.exit_code == 0, result.output
    assert "…" not in result.output
    assert all(len(line) <= 80 for line in result.output.splitlines())
    assert "bm25-plain (full)" in result.output and "default (keywords)" in result.output
    assert len(re.findall(r"\b[01]\.\d{3}\b", result.output)) >= 4 * 5  # every metric, whole
    assert re.search(r"\b1\.00x\b", result.output)  # the baseline against itself


def test_a_partial_weights_table_keeps_the_default_weights() -> None:
    weights = RankingConfig(weights={"my-ranker": 0.7}).weights
    assert weights == {"keyword": 0.3, "bm25": 1.0, "my-ranker": 0.7}
    assert RankingConfig(weights={"keyword": 0.0}).weights["keyword"] == 0.0


def test_errors_keep_bracketed_text(tmp_path: Path) -> None:
    missing = tmp_path / "tools[embeddings].jsonl"
    result = runner.invoke(cli(), ["rank", "eval", "--tools", str(missing), "--queries", str(missing)])
    assert result.exit_code == 2
    assert "tools[embeddings].jsonl" in " ".join(result.output.split()).replace(" ", "")


def test_gold_tools_missing_from_the_catalog_are_warned_of_and_no_ratio_is_nan(tmp_path: Path) -> None:
    tools = tmp_path / "tools.jsonl"
    tools.write_text(
        json.dumps({"name": "get_weather", "description": "Weather for a city", "parameters": None}) + "\n"
    )
    queries = tmp_path / "queries.jsonl"
    queries.write_text(
        json.dumps({"query": "weather in Paris", "gold": ["weather_v2"]})
        + "\n"
        + json.dumps({"query": "weather in Oslo", "gold": ["forecast"]})
        + "\n"
    )
    args = [
        "rank",
        "eval",
        "--tools",
        str(tools),
        "--queries",
        str(queries),
        "--ranker",
        "bm25-plain",
        "--form",
        "full",
    ]
    result = runner.invoke(cli(), args, env={"COLUMNS": "200"})
    assert result.exit_code == 0, result.output
    assert "2 of 2 queries name gold tools that are not in" in result.stderr
    assert "queries.jsonl:1, 'weather_v2'" in result.stderr
    assert "nan" not in result.stdout.lower() and "n/a" in result.stdout  # the baseline found none: no ratio
    payload = json.loads(runner.invoke(cli(), [*args, "--json"]).stdout)  # strict JSON: no NaN
    assert payload["queries_with_missing_gold"] == 2
    assert payload["results"][0]["vs_baseline"]["recall_at_5"] is None


def test_a_deeply_nested_query_line_is_a_clear_error(tmp_path: Path) -> None:
    tools = tmp_path / "tools.jsonl"
    tools.write_text(json.dumps({"name": "get_weather", "description": "Weather", "parameters": None}) + "\n")
    queries = tmp_path / "queries.jsonl"
    queries.write_text('{"query": "x", "gold": ' + "[" * 100_000 + "]" * 100_000 + "}\n")
    result = runner.invoke(cli(), ["rank", "eval", "--tools", str(tools), "--queries", str(queries)])
    assert result.exit_code == 2
    assert "queries.jsonl:1: nested more than 64 levels deep" in " ".join(result.output.split())
