"""``greenroom rank eval`` reads well at 80 columns and in a pipe, and a partial
``weights`` table keeps the default weights of the rankers it does not name."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import typer
from gr_testutil import DATASETS, plugin_cli
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
