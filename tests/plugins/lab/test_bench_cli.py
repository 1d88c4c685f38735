"""``greenroom bench sessions`` at 80 columns: every strategy's name and every number is
readable, ``--json`` still carries them all, and ``--plot`` without matplotlib says so
in one line before any work."""

from __future__ import annotations

import json
import sys

import pytest
import typer
from support.gr_testutil import DATASETS, plugin_cli
from typer.testing import CliRunner

CATALOG = DATASETS / "metatool" / "tools.jsonl"
ARGS = ["bench", "sessions", "--catalog", str(CATALOG), "--steps", "8", "--discoveries", "3"]
STRATEGIES = ("all-eager", "inject", "dispatch", "dispatch-names")


@pytest.fixture
def cli() -> typer.Typer:
    return plugin_cli()  # type: ignore[no-any-return]


@pytest.fixture(scope="module")
def numbers() -> dict:
    result = CliRunner().invoke(plugin_cli(), [*ARGS, "--json"], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


@pytest.mark.skipif(not CATALOG.exists(), reason="../shared/datasets not present")
def test_the_tables_are_readable_at_80_columns(cli: typer.Typer, numbers: dict) -> None:
    result = CliRunner().invoke(cli, ARGS, env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert all(len(ln) <= 80 for ln in lines) and "…" not in result.stdout
    prices = list(numbers["all-eager"]["prices"])
    rows = [ln.split() for ln in lines if ln.split() and ln.split()[0] in STRATEGIES]
    assert [r[0] for r in rows] == list(STRATEGIES) * len(prices)  # dispatch and dispatch-names apart
    for row, (name, price) in zip(rows, [(s, p) for p in prices for s in STRATEGIES], strict=True):
        billed = numbers[name]["prices"][price]
        assert row[1] == f"{billed['input_tokens']:,}" and row[2] == f"{billed['cache_read']:,}"
        assert row[5] == f"{billed['cost']:.4f}"


def test_plot_without_matplotlib_says_so_before_any_work(
    cli: typer.Typer, monkeypatch: pytest.MonkeyPatch, tmp_path
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    result = CliRunner().invoke(cli, [*ARGS, "--plot", str(tmp_path / "cost.png")], env={"COLUMNS": "80"})
    assert result.exit_code == 2
    assert result.stdout == ""  # no tables: the replay never ran
    assert result.stderr.strip().splitlines() == [
        "error: --plot needs matplotlib, which is not installed: pip install 'greenroom[bench]'"
    ]
    assert not (tmp_path / "cost.png").exists()


@pytest.mark.skipif(not CATALOG.exists(), reason="../shared/datasets not present")
def test_limit_and_plot(cli: typer.Typer, tmp_path) -> None:
    pytest.importorskip("matplotlib")
    png = tmp_path / "cost.png"
    args = ["bench", "sessions", "--catalog", str(CATALOG), "--steps", "6", "--discoveries", "2", "--limit", "20"]
    result = CliRunner().invoke(cli, [*args, "--plot", str(png)], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "tools.jsonl (20 tools)" in result.stdout  # only the first 20 tools were replayed
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_a_catalog_that_is_not_one_is_a_clear_error(cli: typer.Typer, tmp_path) -> None:
    bad = tmp_path / "tools.jsonl"
    bad.write_text('{"name": "x", "description": "ok"}\nnot json\n')
    result = CliRunner().invoke(cli, ["bench", "sessions", "--catalog", str(bad)])
    assert result.exit_code == 2 and result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and "tools.jsonl" in line and "Traceback" not in result.output
