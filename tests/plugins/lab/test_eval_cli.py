"""``greenroom eval``'s command line: settings that cannot work are one line on stderr and
exit 2 before any session runs, a model that fails is named under the table (never a
traceback per session), ``--plot`` draws the curves, and ``--fresh`` starts over."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from support.eval_testutil import write_catalog
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

NO_KEY = "GREENROOM_LAB_TEST_UNSET_KEY"


def cli(*args: str, **env: str) -> Any:
    return CliRunner().invoke(plugin_cli(), ["eval", *args], env={"COLUMNS": "80", **env})


@pytest.fixture
def catalog(tmp_path: Path) -> tuple[Path, Path]:
    return write_catalog(tmp_path)


def one_line_error(result: Any, said: str) -> None:
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("error: ") and said in line, line


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--agent", "human"], "--agent must be simulated or model, not 'human'"),
        (["--arms", "dispatch,eagr"], "--arms: no arm named 'eagr'"),
        (["--price", "free"], "--price: no price named 'free'; the prices are anthropic:claude-sonnet-4.5"),
        (["--concurrency", "0"], "--concurrency must be at least 1"),
        (["--sessions", "0"], "--sessions and --pool must be at least 1"),
        (["--pool", "0"], "--sessions and --pool must be at least 1"),
        (["--agent", "model"], "--agent model with --tools needs --model SPEC"),
        (["--stream", "poems"], "--stream must be one of tools, workflows, verbatim, not 'poems'"),
        (["--requests", "0"], "--requests must be from 1 to 50, not 0"),
        (["--seeds", "0"], "--seeds must be from 1 to 100, not 0"),
        (["--context-window", "-5"], "--context-window must be a number of tokens, 0 for none, not -5"),
    ],
)
def test_settings_that_cannot_work_stop_before_any_session(
    catalog: tuple[Path, Path], tmp_path: Path, args: list[str], said: str
) -> None:
    tools, tasks = catalog
    out = tmp_path / "o"
    one_line_error(cli("--tools", str(tools), "--tasks", str(tasks), "--out", str(out), *args), said)
    assert not (out / "sessions.jsonl").exists()


def test_what_is_evaluated_is_a_config_or_a_catalog_and_must_exist(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = catalog
    out = ["--tasks", str(tasks), "--out", str(tmp_path / "o")]
    one_line_error(cli(*out), "give a config file or --tools TOOLS.jsonl (one of them)")
    one_line_error(cli(str(tmp_path / "agent.toml"), "--tools", str(tools), *out), "(one of them)")
    one_line_error(cli(str(tmp_path / "nope.toml"), *out), "nope.toml: no such config file")
    one_line_error(cli("--tools", str(tmp_path / "nope.jsonl"), *out), "--tools " + str(tmp_path / "nope.jsonl"))


def test_a_missing_task_file_is_named(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    one_line_error(
        cli("--tools", str(catalog[0]), "--tasks", str(tmp_path / "none.jsonl"), "--out", str(tmp_path / "o")),
        "none.jsonl: cannot read the task file",
    )


def test_a_broken_config_is_a_clear_error(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    config = tmp_path / "agent.toml"
    config.write_text("[agent]\nmax_steps = 'many'\n")
    result = cli(str(config), "--tasks", str(catalog[1]), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and "agent.max_steps" in result.stderr and "Traceback" not in result.output


def test_plot_without_matplotlib_says_so_before_any_session(
    catalog: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # as if it were not installed
    tools, tasks = catalog
    out, png = tmp_path / "o", tmp_path / "curves.png"
    result = cli("--tools", str(tools), "--tasks", str(tasks), "--out", str(out), "--plot", str(png))
    one_line_error(result, "--plot needs matplotlib, which is not installed: pip install 'greenroom[bench]'")
    assert not png.exists() and not out.exists()


def test_plot_draws_the_learning_curves(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    tools, tasks = catalog
    png = tmp_path / "curves.png"
    args = ["--tools", str(tools), "--tasks", str(tasks), "--sessions", "4", "--arms", "all-eager,dispatch+priors"]
    result = cli(*args, "--out", str(tmp_path / "o"), "--plot", str(png), "--json")
    assert result.exit_code == 0, result.output
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000
    assert [a["name"] for a in json.loads(result.stdout)["arms"]] == ["all-eager", "dispatch+priors"]


def test_a_model_that_fails_is_named_under_the_table_not_as_tracebacks(
    catalog: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(NO_KEY, raising=False)
    tools, tasks = catalog
    config = tmp_path / "agent.toml"
    config.write_text(
        f'[agent]\nmodel = "openai:gpt-5"\n\n[model]\napi_key_env = "{NO_KEY}"\n\n[tools]\ncatalogs = ["{tools}"]\n'
    )
    args = [str(config), "--tasks", str(tasks), "--agent", "model", "--sessions", "3", "--arms", "dispatch"]
    result = cli(*args, "--out", str(tmp_path / "o"))
    assert result.exit_code == 0, result.output  # the evaluation ran: its arm's sessions are errors
    assert "Traceback" not in result.output
    said = " ".join(result.stdout.split())
    assert "dispatch: 3 sessions ended in an error" in said and "failed task check" not in said
    assert f"the model failed: MissingApiKeyError: openai: no API key: the environment variable {NO_KEY}" in said
    again = cli(*args, "--out", str(tmp_path / "o"), "--json")  # resumed: the reason is kept with the results
    (arm,) = json.loads(again.stdout)["arms"]
    assert arm["errors"] == 3 and arm["check_errors"] == 0
    assert arm["error_messages"][0].startswith("the model failed: MissingApiKeyError: openai: no API key")


def test_fresh_forgets_the_results_and_what_the_arms_learned(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = catalog
    out = tmp_path / "o"
    args = ["--tools", str(tools), "--tasks", str(tasks), "--sessions", "3", "--arms", "dispatch+priors"]
    assert cli(*args, "--out", str(out)).exit_code == 0
    assert list(out.glob("*.priors.sqlite3*"))  # the arm learned into a store of its own there
    (out / "sessions.jsonl").write_text((out / "sessions.jsonl").read_text().splitlines()[0] + "\n")
    refused = cli(*args, "--seed", "9", "--out", str(out))
    assert refused.exit_code == 2 and "--fresh" in refused.stderr
    fresh = cli(*args, "--seed", "9", "--out", str(out), "--fresh", "--json")
    assert fresh.exit_code == 0, fresh.output
    assert json.loads(fresh.stdout)["settings"]["mix"]["seed"] == 9
    assert len((out / "sessions.jsonl").read_text().splitlines()) == 3


def test_a_model_the_config_cannot_build_stops_the_evaluation_with_its_key(
    catalog: tuple[Path, Path], tmp_path: Path
) -> None:
    tools, tasks = catalog
    config = tmp_path / "agent.toml"
    config.write_text(f'[agent]\nmodel = "nosuchprovider:x"\n\n[tools]\ncatalogs = ["{tools}"]\n')
    args = [str(config), "--tasks", str(tasks), "--agent", "model", "--sessions", "2", "--arms", "dispatch"]
    result = cli(*args, "--out", str(tmp_path / "o"))
    assert result.exit_code == 2 and result.stdout == "" and "Traceback" not in result.output
    said = " ".join(result.stderr.split())
    assert f"error: {config}: agent.model: unknown model provider 'nosuchprovider'" in said


def test_price_no_cache_bills_every_input_token_at_the_input_price(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = catalog
    args = ["--tools", str(tools), "--tasks", str(tasks), "--arms", "dispatch", "--sessions", "3", "--json"]
    cached = json.loads(cli(*args, "--out", str(tmp_path / "a")).stdout)["arms"][0]
    plain = json.loads(cli(*args, "--out", str(tmp_path / "b"), "--price", "no-cache").stdout)["arms"][0]
    assert plain["cost_no_cache_per_session"] == cached["cost_no_cache_per_session"]
    assert plain["cost_per_session"] == pytest.approx(plain["cost_no_cache_per_session"], rel=1e-12)
    assert cached["cost_per_session"] < cached["cost_no_cache_per_session"]
