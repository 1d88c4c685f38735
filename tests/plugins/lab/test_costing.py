"""Session costing: the cache simulation bills like the providers, and the replay of a
real session (``greenroom bench sessions``, which the lab adds to the command line)
puts dispatch below all-eager and inject."""

from __future__ import annotations

import json

import pytest
import typer
from support.gr_testutil import DATASETS, plugin_cli
from typer.testing import CliRunner

from greenroom_lab.costing import Price, Request, bill

ANTHROPIC = Price(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75, cache="anthropic")
OPENAI = Price(input=1.25, output=10.0, cache_read=0.125, cache_write=1.25, cache="openai")
NONE = Price(input=3.0, output=15.0, cache_read=3.0, cache_write=3.0, cache="none")


def req(prefix: str, tokens: int, messages: list[tuple[str, int]]) -> Request:
    return Request(prefix, tokens, tuple(t for _, t in messages), tuple(i for i, _ in messages))


def test_anthropic_reads_the_shared_prefix_and_writes_the_rest() -> None:
    first = req("p", 2000, [("u", 100)])
    second = req("p", 2000, [("u", 100), ("a", 50), ("t", 400)])
    b1, b2 = bill([first, second], ANTHROPIC)
    assert (b1.cache_read, b1.cache_write, b1.uncached) == (0, 2100, 0)
    assert (b2.cache_read, b2.cache_write, b2.uncached) == (2100, 450, 0)
    assert b2.cost == pytest.approx((2100 * 0.3 + 450 * 3.75) / 1e6)


def test_a_changed_prefix_invalidates_everything_after_it() -> None:
    first = req("p", 2000, [("u", 100)])
    changed = req("q", 2300, [("u", 100), ("a", 50)])
    _, b = bill([first, changed], ANTHROPIC)
    assert b.cache_read == 0 and b.cache_write == 2450


def test_openai_caches_from_1024_tokens_in_128_token_steps() -> None:
    small = [req("p", 900, [("u", 50)]), req("p", 900, [("u", 50), ("a", 10)])]
    assert bill(small, OPENAI)[1].cache_read == 0
    big = [req("p", 2000, [("u", 100)]), req("p", 2000, [("u", 100), ("a", 10)])]
    b = bill(big, OPENAI)[1]
    assert b.cache_read == 1024 + ((2100 - 1024) // 128) * 128 and b.cache_write == 0
    assert b.uncached == 2110 - b.cache_read


def test_no_cache_bills_everything_as_input() -> None:
    b = bill([req("p", 1000, [("u", 10)]), req("p", 1000, [("u", 10)])], NONE)[1]
    assert (b.cache_read, b.cache_write, b.uncached) == (0, 0, 1010)


@pytest.fixture
def cli() -> typer.Typer:
    return plugin_cli()  # type: ignore[no-any-return]


def test_the_plugin_adds_bench_sessions_to_the_command_line(cli: typer.Typer) -> None:
    result = CliRunner().invoke(cli, ["bench", "sessions", "--help"])
    assert result.exit_code == 0, result.output
    assert "Price one replayed session under each strategy" in result.output


def test_bench_sessions_names_a_missing_catalog(cli: typer.Typer, tmp_path) -> None:
    result = CliRunner().invoke(cli, ["bench", "sessions", "--catalog", str(tmp_path / "nope.jsonl")])
    assert result.exit_code == 2
    assert "nope.jsonl" in result.output and "Traceback" not in result.output


@pytest.mark.skipif(not (DATASETS / "github_mcp").exists(), reason="../shared/datasets not present")
def test_bench_sessions_dispatch_beats_all_eager_and_inject_on_github_mcp(cli: typer.Typer) -> None:
    result = CliRunner().invoke(
        cli,
        [
            "bench",
            "sessions",
            "--catalog",
            str(DATASETS / "github_mcp" / "tools.jsonl"),
            "--steps",
            "30",
            "--discoveries",
            "5",
            "--json",
        ],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    for price in ("anthropic:claude-sonnet-4.5", "openai:gpt-5", "no-cache:claude-sonnet-4.5"):
        eager = data["all-eager"]["prices"][price]["cost"]
        dispatch = data["dispatch"]["prices"][price]["cost"]
        inject = data["inject"]["prices"][price]["cost"]
        limit = 0.4 if price.startswith("no-cache") else 0.5
        assert dispatch <= limit * eager and dispatch < inject, price
    assert data["dispatch"]["prefixes"] == 1 and data["inject"]["prefixes"] > 1
