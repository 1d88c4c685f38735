"""The lab is a first-party plugin of its own: ``greenroom plugins`` lists ``lab`` with the
one hook that adds ``greenroom eval`` and ``greenroom bench``, deferred-tools adds no
command any more, and the commands keep every option they had, through the real
``greenroom`` command line (entry points, not a test double), with the options added since."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

from typer.testing import CliRunner

from greenroom.cli import app

EVAL_OPTIONS = [
    "--tasks",
    "--tools",
    "--agent",
    "--model",
    "--arms",
    "--sessions",
    "--pool",
    "--zipf",
    "--seed",
    "--stream",
    "--requests",
    "--seeds",
    "--context-window",
    "--max-steps",
    "--price",
    "--concurrency",
    "--check-timeout",
    "--out",
    "--fresh",
    "--json",
    "--plot",
    "--help",
]
BENCH_SESSIONS_OPTIONS = ["--catalog", "--steps", "--discoveries", "--limit", "--json", "--plot", "--help"]


def greenroom(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "120"}
    return subprocess.run([sys.executable, "-m", "greenroom.cli", *args], capture_output=True, text=True, env=env)


def options(help_text: str) -> list[str]:
    """The long options a help text lists, in its order."""
    return [m.group(1) for m in re.finditer(r"^\s+(?:-\w, )?(--[\w-]+)", help_text, re.M)]


def test_greenroom_plugins_lists_the_lab_and_deferred_tools_adds_no_command() -> None:
    result = CliRunner().invoke(app, ["plugins", "--json"])
    assert result.exit_code == 0, result.output
    rows = {r["name"]: r for r in json.loads(result.stdout)}
    lab = rows["lab"]
    assert lab["status"] == "enabled" and lab["distribution"] == "greenroom"
    assert lab["entry_point"] == "lab = greenroom_lab:LabPlugin"
    assert lab["hooks"] == ["greenroom_cli_commands"]  # nothing for a run: the lab only adds commands
    assert "greenroom_cli_commands" not in rows["deferred-tools"]["hooks"]


def test_eval_keeps_its_options_through_the_real_command_line() -> None:
    result = greenroom("eval", "--help")
    assert result.returncode == 0, result.stderr
    assert "Task-level evaluation: run the tasks under several arms" in result.stdout
    assert options(result.stdout) == EVAL_OPTIONS
    assert "all-eager, dispatch, dispatch+priors" in " ".join(result.stdout.split())  # the default arms


def test_bench_keeps_its_command_and_options_through_the_real_command_line() -> None:
    group = greenroom("bench", "--help")
    assert group.returncode == 0, group.stderr
    assert "Reproducible measurements." in group.stdout and "sessions" in group.stdout
    sessions = greenroom("bench", "sessions", "--help")
    assert sessions.returncode == 0, sessions.stderr
    assert options(sessions.stdout) == BENCH_SESSIONS_OPTIONS
