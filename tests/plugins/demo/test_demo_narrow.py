"""``greenroom demo`` at 80 columns: its step lines and summary fit without losing a
number, and it says what its model is, where what it learned is kept, who shares that,
and the exact command that shows it (which works)."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest
import typer
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom_demo.agent.policy import FINAL

TASK_TOOLS = ["monitoring_list_active_alerts", "oncall_get_current", "pager_send_page", "slack_post_incident_note"]
NARROW = {"COLUMNS": "80"}


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture
def cli() -> typer.Typer:
    return plugin_cli()  # type: ignore[no-any-return]


def test_the_demo_fits_80_columns_and_points_at_what_it_learned(cli: typer.Typer, home: Path) -> None:
    result = CliRunner().invoke(cli, ["demo", "--fresh"], env=NARROW)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    command = next(ln.strip() for ln in lines if ln.strip().startswith("greenroom priors show"))
    # the command is printed whole, to be pasted, and in a pipe the model's answer is one
    # plain line (a terminal wraps it), streamed as it was or whole; every other line fits
    whole = {command, FINAL} | {ln.strip() for ln in lines if ln.startswith("  answer: ")}
    assert f"  {FINAL}" in lines
    assert [ln for ln in lines if len(ln) > 80 and ln.strip() not in whole] == []
    steps = [ln for ln in lines if ln.startswith("step ")]
    assert steps and all("tokens = sys" in ln and ln.split("prefix ")[1].strip() for ln in steps)
    table = [ln for ln in lines if ln.startswith("│")]
    assert table and not any("…" in row for row in table)  # no number cut in the summary table
    assert "searches: 4" in result.output and "1 hash over" in result.output

    said = " ".join(result.output.split())
    assert "scripted planner" in said
    assert "kept per OS user" in said and "--fresh forgets it" in said
    assert str(home / "demo") in said

    argv = shlex.split(command)
    assert argv[:4] == ["greenroom", "priors", "show", "demo-oncall"]
    shown = CliRunner().invoke(cli, argv[1:], env={"COLUMNS": "200"})
    assert shown.exit_code == 0, shown.output
    assert all(tool in shown.output for tool in TASK_TOOLS)
