"""``greenroom run`` shows a streaming model's text as it arrives: a terminal gets it piece
by piece, a pipe a whole plain line at a time (no partial line, no ANSI), the answer is
not printed twice, ``--no-stream`` waits for whole responses, and Ctrl-C or SIGTERM in
the middle of a stream ends the run the usual way (RunEnd, ``run_end``, the session
saved)."""

from __future__ import annotations

import io
import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from rich.console import Console
from typer.testing import CliRunner

from greenroom import ConfigError
from greenroom import events as ev
from greenroom.cli import app
from greenroom.cli.live import LiveView
from greenroom.models import TextDelta
from greenroom.providers.scripted import make_scripted

ENV = {"COLUMNS": "80", "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1"}
DEADLINE = 60.0
ANSWER = "The checkout alert is ALRT-4821, firing since 09:12 with the p99 latency at 2.4 seconds.\nDana is on call."

TOOLS = '''
from greenroom import tool


@tool
def alerts() -> str:
    """Active alerts."""
    return "ALRT-4821"


TOOLS = [alerts]
'''


def agent(folder: Path, turns: list[dict[str, Any]], *, pace: float = 0.0) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (folder / "tools.py").write_text(TOOLS)
    cfg = folder / "agent.toml"
    cfg.write_text(
        '[agent]\nid = "a"\nmodel = "scripted:turns.jsonl"\n'
        f"[model]\nstream = true\npace = {pace}\n"
        '[tools]\npython = ["tools.py:TOOLS"]\n'
        '[plugins]\nenable = ["scripted"]\n'
    )
    return cfg


TURNS = [{"text": "Looking.", "tool_calls": [{"name": "alerts", "arguments": {}}]}, {"text": ANSWER}]


def test_in_a_pipe_streamed_text_comes_in_whole_plain_lines_once(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["run", str(agent(tmp_path, TURNS)), "what fires?"], env=ENV)
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert "\x1b[" not in result.output
    first, second = ANSWER.split("\n")
    # indented under their step, each line whole (not cut at 80 columns), the answer once
    assert lines[lines.index("  Looking.") + 1] == "  calls alerts {}"
    assert lines[-2:] == [f"  {first}", f"  {second}"] and len(lines[-2]) > 80
    assert "answer:" not in result.output and result.output.count("Dana is on call") == 1


def test_no_stream_waits_for_the_whole_answer(tmp_path: Path) -> None:
    cfg = agent(tmp_path, TURNS)
    result = CliRunner().invoke(app, ["run", str(cfg), "what fires?", "--no-stream"], env=ENV)
    assert result.exit_code == 0, result.output
    assert f"  answer: {ANSWER.splitlines()[0]}" in result.output and "Looking." not in result.output
    quiet = CliRunner().invoke(app, ["run", str(cfg), "what fires?", "-q"], env=ENV)
    assert quiet.exit_code == 0 and quiet.stdout == ANSWER + "\n"


def view(terminal: bool) -> tuple[LiveView, io.StringIO]:
    out = io.StringIO()
    console = Console(file=out, width=40, force_terminal=terminal, color_system="standard" if terminal else None)
    return LiveView(console), out


def test_a_pipe_never_gets_a_partial_line() -> None:
    live, out = view(terminal=False)
    live(ev.RequestSent(step=1))
    out.seek(0), out.truncate()
    for piece in ("The alert ", "is firing", " now.\nDana ", "is on "):
        live.text(TextDelta(piece))
        assert out.getvalue().endswith("\n") or out.getvalue() == ""
    assert out.getvalue() == "  The alert is firing now.\n"
    live(ev.ResponseReceived(step=1, text="The alert is firing now.\nDana is on call."))
    assert out.getvalue() == "  The alert is firing now.\n  Dana is on \n"


def test_a_terminal_gets_each_piece_at_once_and_the_calls_after_the_text() -> None:
    live, out = view(terminal=True)
    live(ev.RequestSent(step=1))
    out.seek(0), out.truncate()
    live.text(TextDelta("Let me "))
    assert "Let me" in out.getvalue() and "\n" not in out.getvalue()  # shown before the line ends
    live.text(TextDelta("look.\nOne"))
    live(ev.ResponseReceived(step=1, text="Let me look.\nOne", tool_calls=({"name": "alerts", "arguments": {}},)))
    plain = [line.rstrip() for line in _strip_ansi(out.getvalue()).splitlines()]
    assert plain == ["  Let me look.", "  One", "  calls alerts {}"]


def test_text_that_is_not_utf8_shows_as_a_replacement_character() -> None:
    for terminal in (False, True):
        live, out = view(terminal=terminal)
        live.text(TextDelta("caf\udce9.txt\n"))
        live(ev.ToolExecuted(step=1, tool="ls", content="caf\udce9 \ud800"))
        shown = _strip_ansi(out.getvalue())
        assert "caf\ufffd.txt" in shown and "caf\ufffd \ufffd" in shown


def _strip_ansi(text: str) -> str:
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


@pytest.mark.parametrize(("options", "path"), [({"stream": "yes"}, "model.stream"), ({"pace": -1}, "model.pace")])
def test_the_scripted_stream_options_are_checked(options: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as caught:
        make_scripted("", options)
    assert caught.value.path == path


# ---------------------------------------------------------------- signals mid-stream


def start(cfg: Path, *args: str | Path) -> subprocess.Popen[str]:
    env = {**os.environ, **ENV, "COLUMNS": "300"}
    return subprocess.Popen(
        [sys.executable, "-m", "greenroom.cli", "run", str(cfg), *map(str, args)],
        cwd=cfg.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.slow
@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_mid_stream_ends_the_run_and_saves_the_session(tmp_path: Path, signum: signal.Signals) -> None:
    # an hour between words: the stream is surely in its middle when the signal comes
    cfg = agent(tmp_path, [{"text": "Checking\nthe rest never comes"}], pace=3600)
    session, trace = tmp_path / "s.json", tmp_path / "t.jsonl"
    proc = start(cfg, "what fires?", "--session", session, "--trace", trace)
    assert proc.stdout is not None
    lines = []
    while not lines or lines[-1] != "  Checking":
        line = proc.stdout.readline()
        assert line, proc.communicate(timeout=DEADLINE)
        lines.append(line.rstrip("\n"))
    proc.send_signal(signum)
    out, err = proc.communicate(timeout=DEADLINE)
    assert proc.returncode == (130 if signum == signal.SIGINT else -signum), err
    name = "Ctrl-C" if signum == signal.SIGINT else signum.name
    assert f"run cancelled ({name}); session saved to {session}" in err and "Traceback" not in err
    assert "the rest" not in out
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert events[-1]["kind"] == "run_end" and events[-1]["stop_reason"] == "cancelled"
    assert not any(e["kind"] == "response" for e in events)
    doc = json.loads(session.read_text())
    assert [(m["role"], m["content"]) for m in doc["messages"]] == [("user", "what fires?")]
