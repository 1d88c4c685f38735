"""The command line at 80 columns and in a pipe: the live view's lines fit and keep their
numbers, long tool text is cut at its end, the model's answer is printed whole, plugins
whose SDK is missing show as unusable, and an unknown provider whose plugin is installed
but off says to enable it."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import pytest
from rich.console import Console
from typer.testing import CliRunner

from greenroom import events as ev
from greenroom.cli import app
from greenroom.cli.live import LiveView
from greenroom_demo.agent.policy import FINAL

NARROW = {"COLUMNS": "80"}


def live_lines(*events: ev.Event, terminal: bool = False) -> list[str]:
    out = io.StringIO()
    view = LiveView(Console(file=out, width=80, force_terminal=terminal, color_system="standard"))
    for event in events:
        view(event)
    return out.getvalue().splitlines()


def test_a_request_line_fits_80_columns_with_every_number_readable() -> None:
    sent = ev.RequestSent(
        step=12,
        system_tokens=13_688,
        tools_tokens=33_460,
        messages_tokens=12_744,
        prefix_hash="4ecd6db7dbf44c0c9e1f",
        tool_names=tuple(f"t{i}" for i in range(191)),
    )
    (line,) = live_lines(sent)
    assert len(line) <= 80
    for number in ("step 12", "59,892 tokens", "13,688", "33,460 (191)", "12,744"):
        assert number in line, line


def test_long_tool_text_is_cut_at_the_end_and_the_answer_is_printed_whole() -> None:
    answer = "All done. " * 30
    lines = live_lines(
        ev.ResponseReceived(step=1, tool_calls=({"name": "search_logs", "arguments": {"query": "x" * 300}},)),
        ev.ToolExecuted(step=1, tool="search_logs", content="y" * 500),
        ev.ResponseReceived(step=2, text=answer),
    )
    calls, result, *said = lines
    assert calls.startswith("  calls search_logs {") and calls.endswith("…") and len(calls) == 80
    assert result.startswith("  ok search_logs: yyy") and result.endswith("…") and len(result) == 80
    assert "".join(said).replace(" ", "") == f"answer: {answer}".replace(" ", "")  # nothing cut


def test_in_a_pipe_the_lines_are_plain_and_in_a_terminal_styled() -> None:
    sent = ev.RequestSent(step=1, system_tokens=10, tools_tokens=20, messages_tokens=30, prefix_hash="ab")
    (plain,) = live_lines(sent)
    assert "\x1b[" not in plain and plain.startswith("step 1: 60 tokens")
    (styled,) = live_lines(sent, terminal=True)
    assert "\x1b[" in styled


def test_text_that_looks_like_markup_is_printed_as_is() -> None:
    (line,) = live_lines(ev.ToolExecuted(step=1, tool="pip", content="pip install 'greenroom[embeddings]'"))
    assert line == "  ok pip: pip install 'greenroom[embeddings]'"


@pytest.fixture
def no_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    """The openai SDK as if it were not installed (a None entry fails every import of it)."""
    monkeypatch.setitem(sys.modules, "openai", None)


@pytest.mark.usefixtures("no_openai")
def test_a_provider_whose_sdk_is_missing_is_unusable_not_enabled() -> None:
    rows = {r["name"]: r for r in json.loads(CliRunner().invoke(app, ["plugins", "--json"], env=NARROW).output)}
    assert rows["openai"]["status"] == "unusable" and rows["openai"]["error"] is None
    assert "pip install 'greenroom[openai]'" in rows["openai"]["unusable"]
    assert rows["scripted"]["status"] == "enabled" and rows["scripted"]["unusable"] is None

    shown = CliRunner().invoke(app, ["plugins"], env=NARROW)
    assert shown.exit_code == 0, shown.output
    (openai_row,) = [ln for ln in shown.output.splitlines() if ln.startswith("│ openai ")]
    assert "unusable" in openai_row and "enabled" not in openai_row
    assert "plugin 'openai' is installed but unusable" in shown.output
    assert "greenroom[openai]" in shown.output.replace("\n", "")


def test_an_unknown_provider_whose_plugin_is_off_says_to_enable_it(tmp_path: Path) -> None:
    (tmp_path / "script.jsonl").write_text('{"text": "hi"}\n')
    config = tmp_path / "agent.toml"
    config.write_text('[agent]\nmodel = "scripted:script.jsonl"\n')
    env = {**NARROW, "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1"}
    result = CliRunner().invoke(app, ["run", str(config), "hi"], env=env)
    said = " ".join(result.output.split())
    assert result.exit_code == 2, result.output
    assert "unknown model provider 'scripted'" in said
    assert "the installed plugin 'scripted' provides it but is not enabled: [plugins] enable = [\"scripted\"]" in said
    assert "greenroom[openai]" not in said

    config.write_text('[plugins]\nenable = ["scripted"]\n\n[agent]\nmodel = "scripted:script.jsonl"\n')
    assert CliRunner().invoke(app, ["run", str(config), "hi"], env=env).exit_code == 0


def test_run_at_80_columns_prints_one_readable_line_per_step(tmp_path: Path) -> None:
    demo = Path(__file__).resolve().parents[3] / "examples" / "demo" / "demo.toml"
    env = {**NARROW, "GREENROOM_HOME": str(tmp_path / "home")}
    result = CliRunner().invoke(
        app, ["run", str(demo), "checkout is slow", "--trace", str(tmp_path / "t.jsonl")], env=env
    )
    assert result.exit_code == 0, result.output
    # the answer is printed whole (the demo's planner streams it: a plain line in a pipe)
    lines = [ln for ln in result.output.splitlines() if not ln.startswith("  answer: ") and ln.strip() != FINAL]
    assert all(len(ln) <= 80 for ln in lines), [ln for ln in lines if len(ln) > 80]
    requests = [json.loads(ln) for ln in (tmp_path / "t.jsonl").read_text().splitlines() if '"request"' in ln]
    steps = [ln for ln in lines if ln.startswith("step ")]
    assert len(steps) == len(requests)
    for line, sent in zip(steps, requests, strict=True):  # every number whole, none cut
        total = sent["system_tokens"] + sent["tools_tokens"] + sent["messages_tokens"]
        assert line.startswith(f"step {sent['step']}: {total:,} tokens = sys {sent['system_tokens']:,} + tools ")
        assert f"+ msgs {sent['messages_tokens']:,}  prefix {sent['prefix_hash'][:8]}" in line


def test_run_help_keeps_the_session_table_name() -> None:
    from greenroom.cli import app as cli_app

    result = CliRunner().invoke(cli_app, ["run", "--help"], env={"COLUMNS": "200"})
    assert "[session] dir" in result.output


def test_a_path_longer_than_the_line_is_printed_whole_to_be_copied(tmp_path: Path) -> None:
    deep = tmp_path / ("a-folder-with-a-long-name-" * 4) / "agent.toml"
    deep.parent.mkdir(parents=True)
    deep.write_text("[agent\n")
    for args in (["config", "check", str(deep)], ["run", str(deep), "hi"]):
        result = CliRunner().invoke(app, args, env=NARROW)
        assert result.exit_code != 0
        assert any(str(deep) in line for line in result.output.splitlines()), result.output
