"""SIGTERM and SIGHUP end ``greenroom run`` the way one Ctrl-C does, as real processes:
RunEnd runs, the trace's last line is ``run_end`` ("cancelled"), the session is saved
with the open tool call answered, and then the process ends by that signal (what a
program that cleans up on a signal does; a shell reports 128 + its number). A
signal that arrives before the run starts ends the process as before (nothing to save,
the session file untouched), and an ignored SIGHUP (``nohup``) stays ignored."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.gr_testutil import BLOCKING_TOOLS
from typer.testing import CliRunner

from greenroom._support.storage import FileHold
from greenroom.cli import app

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

ENV = {"COLUMNS": "300", "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1"}
DEADLINE = 60.0


def agent(folder: Path, turns: list[dict[str, Any]]) -> Path:
    """A config whose scripted model plays ``turns``, with the blocking tools."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "blocking.py").write_text(BLOCKING_TOOLS)
    (folder / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    cfg = folder / "agent.toml"
    cfg.write_text(
        '[agent]\nid = "a"\nmodel = "scripted:turns.jsonl"\n'
        '[tools]\npython = ["blocking.py:TOOLS"]\n'
        '[plugins]\nenable = ["scripted"]\n'
    )
    return cfg


def start(cfg: Path, *args: str | Path, ignore_hup: bool = False) -> subprocess.Popen[str]:
    env = {**os.environ, **ENV, "GR_MARKER": str(cfg.parent / "marker")}

    def ignoring_hup() -> None:
        signal.signal(signal.SIGHUP, signal.SIG_IGN)

    return subprocess.Popen(
        [sys.executable, "-m", "greenroom.cli", "run", str(cfg), *map(str, args)],
        cwd=cfg.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        preexec_fn=ignoring_hup if ignore_hup else None,
    )


def until(condition: Any, proc: subprocess.Popen[str], what: str) -> None:
    """Poll ``condition`` until it holds, the process still running, within the deadline."""
    deadline = time.monotonic() + DEADLINE
    while not condition():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, f"{what} never happened"
        time.sleep(0.02)


def trace_lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def assert_cancelled_and_saved(trace: Path, session: Path, tool: str) -> None:
    events = trace_lines(trace)
    assert events[0]["kind"] == "run_start"
    assert events[-1]["kind"] == "run_end" and events[-1]["stop_reason"] == "cancelled"
    doc = json.loads(session.read_text())
    assert doc["runs"] == 1
    assert [(m["role"], m["content"], m["is_error"]) for m in doc["messages"]] == [
        ("user", "please wait", False),
        ("assistant", "", False),
        ("tool", f"tool {tool!r} cancelled before it finished", True),
    ]


@pytest.mark.slow
@pytest.mark.parametrize(
    ("signum", "tool"),
    [
        (signal.SIGTERM, "wait_async"),
        (signal.SIGTERM, "wait_sync"),
        (signal.SIGHUP, "wait_async"),
        (signal.SIGHUP, "wait_sync"),
    ],
)
def test_a_termination_signal_ends_the_run_like_ctrl_c(tmp_path: Path, signum: signal.Signals, tool: str) -> None:
    cfg = agent(tmp_path, [{"tool_calls": [{"name": tool, "arguments": {}}]}, {"text": "late"}])
    marker, session, trace = tmp_path / "marker", tmp_path / "s.json", tmp_path / "t.jsonl"
    proc = start(cfg, "please wait", "--session", session, "--trace", trace)
    until(marker.exists, proc, "the tool starting")
    proc.send_signal(signum)
    _, err = proc.communicate(timeout=DEADLINE)
    assert proc.returncode == -signum, err
    assert f"run cancelled ({signum.name}); session saved to {session}" in err
    assert "Traceback" not in err
    assert_cancelled_and_saved(trace, session, tool)


@pytest.mark.slow
def test_an_ignored_sighup_stays_ignored(tmp_path: Path) -> None:
    # nohup: the hang-up is ignored, the run goes on until something else ends it; signals
    # arrive in order, so had the SIGHUP counted, the run would say SIGHUP
    cfg = agent(tmp_path, [{"tool_calls": [{"name": "wait_async", "arguments": {}}]}])
    marker, session, trace = tmp_path / "marker", tmp_path / "s.json", tmp_path / "t.jsonl"
    proc = start(cfg, "please wait", "--session", session, "--trace", trace, ignore_hup=True)
    until(marker.exists, proc, "the tool starting")
    proc.send_signal(signal.SIGHUP)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=DEADLINE)
    assert proc.returncode == -signal.SIGTERM, err
    assert "run cancelled (SIGTERM)" in err and "SIGHUP" not in err
    assert_cancelled_and_saved(trace, session, "wait_async")


@pytest.mark.slow
def test_a_signal_before_the_run_starts_ends_the_process_and_touches_nothing(tmp_path: Path) -> None:
    # the run waits for a session another process holds: nothing has started, nothing is
    # lost, so SIGTERM ends the process as it always did, and the session file is as it was
    cfg = agent(tmp_path, [{"text": "never sent"}])
    session = tmp_path / "s.json"
    with FileHold(session):
        proc = start(cfg, "hello", "--session", session, "--wait", "600")
        assert proc.stderr is not None
        heard = proc.stderr.readline()  # said before it waits
        assert "is in use" in heard and "waiting up to 600 s" in heard, heard
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=DEADLINE)
    assert proc.returncode == -signal.SIGTERM
    assert not session.exists()


def test_the_command_leaves_the_signal_handlers_as_it_found_them(tmp_path: Path) -> None:
    cfg = agent(tmp_path, [{"text": "hello"}])
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    result = CliRunner().invoke(app, ["run", str(cfg), "hi", "-q"], env=ENV)
    assert result.exit_code == 0, result.output
    assert result.stdout.strip() == "hello"
    assert {s: signal.getsignal(s) for s in before} == before
