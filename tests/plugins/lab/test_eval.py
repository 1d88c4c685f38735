"""``greenroom eval`` on a small catalog with the simulated agent: tasks done, arms that
differ by what greenroom showed, learning that shows, resuming, and clear errors."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.eval_testutil import TASKS, write_catalog
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom_lab.eval.arms import parse_arms
from greenroom_lab.eval.plan import Target, evaluate
from greenroom_lab.eval.runner import EvalError
from greenroom_lab.eval.tasks import Mix, TaskFileError, load_tasks


@pytest.fixture
def catalog(tmp_path: Path) -> tuple[Path, Path]:
    return write_catalog(tmp_path)


def run(catalog: tuple[Path, Path], out: Path, arms: str, **mix: Any) -> dict[str, Any]:
    tools, tasks = catalog
    settings = {"sessions": 12, "pool": 4, "zipf": 1.0, "seed": 3, **mix}
    return evaluate(Target(tools=tools), tasks, parse_arms(arms), Mix(**settings), out)


def by_name(report: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {a["name"]: a for a in report["arms"]}


def test_simulated_agent_completes_tasks_eager_and_deferred(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    arms = by_name(run(catalog, tmp_path / "out", "all-eager,dispatch,inject"))
    for name in ("all-eager", "dispatch", "inject"):
        assert arms[name]["success"] == 1.0, name
        assert arms[name]["sessions"] == 12
    # every tool eager: nothing to search; deferred: the agent searched to find its tools
    assert arms["all-eager"]["searches_per_session"] == 0
    assert arms["dispatch"]["searches_per_session"] >= 1
    # the deferred arms sent far fewer tokens than sending 46 schemas every step
    assert arms["dispatch"]["input_tokens_per_session"] < arms["all-eager"]["input_tokens_per_session"]
    assert arms["all-eager"]["cost_ratio"] == 1.0  # the baseline of every ratio


def test_learned_priors_cut_searches(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    # one task over and over: once learned, its tool starts eager and is not searched for
    arms = by_name(run(catalog, tmp_path / "out", "dispatch,dispatch+priors", pool=1, sessions=8))
    plain, learned = arms["dispatch"], arms["dispatch+priors"]
    assert learned["success"] == plain["success"] == 1.0
    assert learned["searches_per_session"] < plain["searches_per_session"]
    assert learned["curve"][-1]["searches"] == 0  # the last sessions found it eager
    assert learned["steps_per_session"] < plain["steps_per_session"]
    # dispatch keeps one prefix from session to session; learning changes it at revisions
    assert plain["prefix_changes"] == 0 < learned["prefix_changes"] < 8


def test_results_resume_where_they_stopped(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    first = run(catalog, out, "dispatch")
    lines = (out / "sessions.jsonl").read_text().splitlines()
    assert len(lines) == 12
    # stopped after five sessions, the last line cut short
    (out / "sessions.jsonl").write_text("\n".join(lines[:5]) + "\n" + lines[5][:20])
    again = run(catalog, out, "dispatch")
    assert again["arms"] == first["arms"]
    kept = [json.loads(line) for line in (out / "sessions.jsonl").read_text().splitlines()[:5]]
    assert [k["index"] for k in kept] == [0, 1, 2, 3, 4]


def test_other_settings_in_the_same_folder_are_refused(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    run(catalog, out, "dispatch")
    with pytest.raises(EvalError, match="--fresh"):
        run(catalog, out, "dispatch", seed=4)
    assert len((out / "sessions.jsonl").read_text().splitlines()) == 12  # nothing lost
    fresh = evaluate(Target(tools=catalog[0]), catalog[1], parse_arms("dispatch"), Mix(12, 4, 1.0, 4), out, fresh=True)
    assert fresh["settings"]["mix"]["seed"] == 4


def test_cli_json_report(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = catalog
    args = ["eval", "--tools", str(tools), "--tasks", str(tasks), "--sessions", "6", "--pool", "4"]
    result = CliRunner().invoke(plugin_cli(), [*args, "--out", str(tmp_path / "o"), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    names = [a["name"] for a in report["arms"]]
    assert names == ["all-eager", "dispatch", "dispatch+priors"]
    for arm in report["arms"]:
        for key in ("strategy", "priors", "success", "searches_per_session", "input_tokens_per_session", "cost_ratio"):
            assert key in arm
    assert report["arms"][0]["cost_ratio"] == 1.0


def test_cli_table_fits_80_columns(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = catalog
    args = ["eval", "--tools", str(tools), "--tasks", str(tasks), "--sessions", "4", "--arms", "dispatch+priors"]
    result = CliRunner().invoke(plugin_cli(), [*args, "--out", str(tmp_path / "o")], env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.output
    assert "dispatch+priors" in result.stdout
    assert max(len(line) for line in result.stdout.splitlines()) <= 80


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        ('{"query": "x", "gold": ["a"]}\n{"query": "y"', "tasks.jsonl:2: not JSON"),
        ('{"query": "", "gold": ["a"]}', "tasks.jsonl:1: query"),
        ('{"query": "x", "gold": []}', "tasks.jsonl:1: gold"),
        ('{"query": "x", "gold": ["a"], "check": "nocolon"}', "tasks.jsonl:1: check"),
        (b'{"query": "\xff", "gold": ["a"]}', "tasks.jsonl:1: not UTF-8"),
        ("\n\n", "no tasks"),
    ],
)
def test_bad_task_files_name_the_line(tmp_path: Path, content: str | bytes, expected: str) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    with pytest.raises(TaskFileError, match=expected):
        load_tasks(path)


def test_unknown_gold_tool_and_unknown_arm_are_clear_errors(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    tools, _ = catalog
    tasks = tmp_path / "bad.jsonl"
    tasks.write_text(json.dumps({"id": "t", "query": "fly me", "gold": ["noSuchTool"]}) + "\n")
    base = ["eval", "--tools", str(tools), "--out", str(tmp_path / "o")]
    result = CliRunner().invoke(plugin_cli(), [*base, "--tasks", str(tasks), "--sessions", "2"])
    assert result.exit_code == 2  # its only task left out: nothing to run
    assert "no task is left" in result.output and "bad.jsonl:1: task 't'" in result.output
    assert "noSuchTool" in result.output and "Traceback" not in result.output
    result = CliRunner().invoke(plugin_cli(), [*base, "--tasks", str(catalog[1]), "--arms", "dispatch,lazy"])
    assert result.exit_code == 2 and "'lazy'" in result.output and "all-eager" in result.output


def test_a_task_checker_decides_with_the_gold_tools(
    catalog: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    checker = tmp_path / "eval_checks.py"
    checker.write_text(
        "def paris(t):\n    return any(c.arguments.get('city') == 'Paris' for c in t.calls)\n"
        "def answered(t):\n    return t.answer != '' and all('stand-in' in c.result for c in t.calls)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    tasks = tmp_path / "checked.jsonl"
    weather = TASKS[0]
    tasks.write_text(
        json.dumps({**weather, "id": "strict", "check": "eval_checks:paris"})
        + "\n"
        + json.dumps({**weather, "id": "loose", "check": "eval_checks:answered"})
        + "\n"
    )
    report = evaluate(Target(tools=catalog[0]), tasks, parse_arms("dispatch"), Mix(6, 2, 0.0, 1), tmp_path / "o")
    sessions = [json.loads(x) for x in (tmp_path / "o" / "sessions.jsonl").read_text().splitlines()]
    requests = [r for s in sessions for r in s["requests"]]
    # the simulated agent fills "city" with a placeholder, so the strict checker says no; the
    # other reads the calls' results, which the checker is given
    assert {r["task"]: r["done"] for r in requests} == {"strict": False, "loose": True}
    assert report["arms"][0]["success"] == sum(r["done"] for r in requests) / len(requests) > 0
    (call,) = {json.dumps(c, sort_keys=True) for r in requests for c in r["calls"]}
    assert json.loads(call)["tool"] == "getWeatherForecast" and "stand-in result" in json.loads(call)["result"]


def test_ctrl_c_keeps_the_sessions_that_ran(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = catalog
    out = tmp_path / "o"
    results = out / "sessions.jsonl"
    cmd = [sys.executable, "-m", "greenroom.cli", "eval", "--tools", str(tools), "--tasks", str(tasks)]
    cmd += ["--arms", "dispatch", "--pool", "4", "--out", str(out)]
    proc = subprocess.Popen([*cmd, "--sessions", "5000"], stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (results.exists() and len(results.read_text().splitlines()) >= 3):
            assert proc.poll() is None and time.monotonic() < deadline
            time.sleep(0.05)  # polling for the file, not timing anything
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
    assert proc.returncode == 130, err
    assert "sessions of this run kept" in err and "Traceback" not in err
    kept = len(results.read_text().splitlines())
    assert 3 <= kept < 5000


def test_several_seeds_run_their_own_streams_and_learn_apart(catalog: tuple[Path, Path], tmp_path: Path) -> None:
    out = tmp_path / "out"
    report = run(catalog, out, "dispatch,dispatch+priors", sessions=6, seeds=3)
    assert report["seeds"] == [3, 4, 5] and set(report["stream"]) == {"3", "4", "5"}
    for arm in report["arms"]:
        assert arm["sessions"] == 18 and set(arm["spread"]) >= {"success", "searches_per_session", "cost_ratio"}
    lines = [json.loads(line) for line in (out / "sessions.jsonl").read_text().splitlines()]
    assert sorted({(r["seed"], r["arm"]) for r in lines}) == [
        (s, a) for s in (3, 4, 5) for a in ("dispatch", "dispatch+priors")
    ]
    assert sorted(p.name for p in out.glob("dispatch-priors-seed*.priors.sqlite3")) == [
        f"dispatch-priors-seed{s}.priors.sqlite3" for s in (3, 4, 5)
    ]  # each seed learns from its own sessions only
    # stopped in the second seed: the same command goes on there
    first = run(catalog, tmp_path / "plain", "dispatch", sessions=6, seeds=3)
    lines = (tmp_path / "plain" / "sessions.jsonl").read_text().splitlines()
    (tmp_path / "plain" / "sessions.jsonl").write_text("\n".join(lines[:8]) + "\n")
    again = run(catalog, tmp_path / "plain", "dispatch", sessions=6, seeds=3)
    assert again["arms"] == first["arms"]


def test_the_simulated_agent_is_held_to_the_window_of_the_model_the_price_names(
    catalog: tuple[Path, Path], tmp_path: Path
) -> None:
    tools, tasks = catalog
    arms = parse_arms("all-eager,dispatch")
    report = evaluate(Target(tools=tools), tasks, arms, Mix(4, 4, 1.0, 3), tmp_path / "a", price="openai:gpt-5")
    assert [a["context_window"] for a in report["arms"]] == [400_000, 400_000]
    small = evaluate(Target(tools=tools), tasks, arms, Mix(4, 4, 1.0, 3), tmp_path / "b", context_window=1800)
    eager, dispatch = small["arms"]
    assert eager["over_window"] == 4 and eager["success"] == 0 and eager["input_tokens_per_session"] == 0
    assert dispatch["over_window"] == 0 and dispatch["success"] == 1.0
    assert dispatch["cost_ratio"] is None  # no ratio against an arm that sent nothing
