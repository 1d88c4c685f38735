"""``greenroom eval`` is never silently wrong: a task whose gold tool cannot be called is
left out with one warning naming its line, a checker that fails is an error of its arm
(whatever it does: not import, raise, exit, hang), and bad settings are clear errors."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.eval_testutil import TASKS, tool_line, write_catalog
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom_lab.eval.arms import parse_arms
from greenroom_lab.eval.plan import Target, evaluate, prepare
from greenroom_lab.eval.tasks import Mix

WEATHER = TASKS[0]
CHECKS = """
import sys, threading

asked = []
release = threading.Event()

def boom(t):
    raise RuntimeError("kaboom")

def leave(t):
    sys.exit(3)

def nothing(t):
    pass

async def later(t):
    return True

def hang(t):
    asked.append(t.task.id)
    release.wait()
    return True
"""


@pytest.fixture
def checks(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A module of checkers that fail, importable as ``eval_fault_checks``."""
    (tmp_path / "eval_fault_checks.py").write_text(CHECKS)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield "eval_fault_checks"
    module = sys.modules.pop("eval_fault_checks", None)
    if module is not None:
        module.release.set()  # the hung checker's thread ends with the test


def cli(*args: str) -> Any:
    return CliRunner().invoke(plugin_cli(), ["eval", *args])


def test_a_task_whose_gold_tool_is_missing_is_left_out_once_before_the_bars(tmp_path: Path) -> None:
    tools, tasks = write_catalog(tmp_path)
    with tasks.open("a") as fh:
        fh.write(json.dumps({"id": "ghost", "query": "Summon a ghost.", "gold": ["summonGhost", "getWeatherForecast"]}))
        fh.write("\n")
    out = tmp_path / "o"
    result = cli(
        "--tools", str(tools), "--tasks", str(tasks), "--sessions", "12", "--arms", "dispatch", "--out", str(out)
    )
    assert result.exit_code == 0, result.output
    err = result.stderr
    warning = "tasks.jsonl:5: task 'ghost' left out: gold tool 'summonGhost' is not among the config's tools"
    assert err.count("left out") == 1 and warning in " ".join(err.split())
    assert err.index("left out") < err.index("dispatch")  # said before the progress bar
    report = [json.loads(x) for x in (out / "sessions.jsonl").read_text().splitlines()]
    assert len(report) == 12 and "ghost" not in {r["task"] for r in report}


def test_a_gold_tool_with_an_invalid_schema_is_left_out(tmp_path: Path) -> None:
    tools, tasks = write_catalog(tmp_path)
    broken = {"type": "object", "properties": {"x": {"type": "strng"}}}
    with tools.open("a") as fh:
        fh.write(json.dumps({"name": "bookBrokenThing", "description": "Book a broken thing", "parameters": broken}))
    with tasks.open("a") as fh:
        fh.write(json.dumps({"id": "broken", "query": "Book a broken thing.", "gold": ["bookBrokenThing"]}) + "\n")
    plan = prepare(Target(tools=tools), tasks, parse_arms("dispatch"), Mix(8, pool=5), tmp_path / "o")
    (warning,) = plan.warnings
    assert warning.startswith(f"{tasks}:5: task 'broken' left out: gold tool 'bookBrokenThing' is unusable")
    assert "unknown type 'strng'" in warning
    assert {t.id for session in plan.stream for t in session} <= {t["id"] for t in TASKS}
    assert plan.settings.left_out == ("broken",)


def test_an_evaluation_runs_beside_a_tool_with_an_invalid_schema(tmp_path: Path) -> None:
    tools, tasks = write_catalog(tmp_path)
    with tools.open("a") as fh:
        fh.write(tool_line("bookBrokenThing", "Book a broken thing", {"x": "strng"}) + "\n")
    report = evaluate(Target(tools=tools), tasks, parse_arms("dispatch"), Mix(8, pool=4), tmp_path / "o")
    assert report["arms"][0]["sessions"] == 8 and report["arms"][0]["success"] == 1.0


@pytest.mark.parametrize(
    ("check", "said"),
    [
        ("boom", "check eval_fault_checks:boom raised RuntimeError: kaboom"),
        ("leave", "check eval_fault_checks:leave raised SystemExit: 3"),
        ("nothing", "check eval_fault_checks:nothing returned NoneType, not True or False"),
        ("later", "check eval_fault_checks:later returned coroutine, not True or False"),
        ("missing", "check eval_fault_checks:missing: cannot import it (AttributeError"),
    ],
)
def test_a_checker_that_fails_is_an_error_of_its_arm(checks: str, tmp_path: Path, check: str, said: str) -> None:
    tasks = tmp_path / "checked.jsonl"
    tasks.write_text(json.dumps({**WEATHER, "check": f"{checks}:{check}"}) + "\n")
    tools, _ = write_catalog(tmp_path)
    (arm,) = evaluate(Target(tools=tools), tasks, parse_arms("dispatch"), Mix(3, pool=1), tmp_path / "o")["arms"]
    assert arm["success"] == 0 and arm["errors"] == arm["check_errors"] == 3
    assert arm["error_messages"][0].startswith(said)


def test_a_module_that_does_not_import_is_a_check_error(tmp_path: Path) -> None:
    tools, _ = write_catalog(tmp_path)
    tasks = tmp_path / "checked.jsonl"
    tasks.write_text(json.dumps({**WEATHER, "check": "no_such_checks_module:ok"}) + "\n")
    result = cli(
        "--tools",
        str(tools),
        "--tasks",
        str(tasks),
        "--sessions",
        "2",
        "--arms",
        "dispatch",
        "--out",
        str(tmp_path / "o"),
    )
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    assert "dispatch: 2 sessions ended in an error (2 of them a failed task check)" in text
    assert "check no_such_checks_module:ok: cannot import it (ModuleNotFoundError" in text


def test_a_hung_checker_is_given_up_and_not_asked_again(checks: str, tmp_path: Path) -> None:
    tasks = tmp_path / "checked.jsonl"
    tasks.write_text(json.dumps({**WEATHER, "check": f"{checks}:hang"}) + "\n")
    tools, _ = write_catalog(tmp_path)
    report = evaluate(
        Target(tools=tools), tasks, parse_arms("dispatch"), Mix(4, pool=1), tmp_path / "o", check_timeout=0.2
    )
    (arm,) = report["arms"]
    assert arm["sessions"] == 4 and arm["errors"] == arm["check_errors"] == 4
    (message,) = arm["error_messages"]
    assert message.startswith("check eval_fault_checks:hang gave no answer within 0.2 s; it is left running")
    assert sys.modules[checks].asked == ["weather"]  # asked once: one thread left waiting, not four


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--zipf", "nan"], "--zipf must be a number of at least 0"),
        (["--zipf", "-1"], "--zipf must be a number of at least 0"),
        (["--out", "{file}"], "names a file; --out is the folder the results go to"),
        (["--check-timeout", "0"], "--check-timeout must be a number of seconds above 0"),
    ],
)
def test_bad_settings_are_clear_errors(tmp_path: Path, args: list[str], said: str) -> None:
    tools, tasks = write_catalog(tmp_path)
    a_file = tmp_path / "results.txt"
    a_file.write_text("mine\n")
    args = [a.replace("{file}", str(a_file)) for a in args]
    result = cli("--tools", str(tools), "--tasks", str(tasks), "--sessions", "2", "--out", str(tmp_path / "o"), *args)
    assert result.exit_code == 2, result.output
    assert said in result.output and "Traceback" not in result.output
    assert a_file.read_text() == "mine\n"


def test_a_deeply_nested_task_line_is_a_clear_error(tmp_path: Path) -> None:
    tools, tasks = write_catalog(tmp_path)
    deep = '{"query": "x", "gold": ["getWeatherForecast"], "extra": ' + "[" * 100_000 + "]" * 100_000 + "}"
    tasks.write_text(tasks.read_text() + deep + "\n")
    result = cli("--tools", str(tools), "--tasks", str(tasks), "--out", str(tmp_path / "o"))
    assert result.exit_code == 2
    assert "tasks.jsonl:5: nested more than 64 levels deep" in result.output and "Traceback" not in result.output


def test_a_gold_tool_the_policy_hides_is_left_out(tmp_path: Path) -> None:
    tools, tasks = write_catalog(tmp_path)
    config = tmp_path / "agent.toml"
    config.write_text(f'[tools]\ncatalogs = ["{tools}"]\n\n[tools.policy]\ndeny = ["sendEmail*"]\n')
    plan = prepare(Target(config=config), tasks, parse_arms("dispatch"), Mix(8, pool=4), tmp_path / "o")
    assert plan.warnings == (
        f"{tasks}:4: task 'mail' left out: gold tool 'sendEmailMessage' is hidden by the config's policy "
        "(policy deny 'sendEmail*')",
    )
