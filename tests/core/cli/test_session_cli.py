"""``greenroom run --session`` as users drive it, in process and as real processes: a
broken or another agent's session file stops the run with exit 2 and stays untouched; a
session another run holds fails at once (exit 75, naming its pid) or is waited for, and
no conversation is lost; one Ctrl-C ends a run with exit 130, the trace ending with
``run_end`` and the session saved; ``[session] dir`` holds bare session names."""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from support.gr_testutil import BLOCKING_TOOLS
from typer.testing import CliRunner

from greenroom._support.storage import FileHold, lock_path
from greenroom.cli import app

runner = CliRunner()
ENV = {"COLUMNS": "300", "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1"}


def agent(folder: Path, name: str, turns: list[dict[str, Any]], agent_id: str = "a", extra: str = "") -> Path:
    """A config ``folder/name.toml`` whose scripted model plays ``turns``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "blocking.py").write_text(BLOCKING_TOOLS)
    (folder / f"{name}.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    cfg = folder / f"{name}.toml"
    cfg.write_text(
        f'[agent]\nid = "{agent_id}"\nmodel = "scripted:{name}.jsonl"\n'
        '[tools]\npython = ["blocking.py:TOOLS"]\n'
        f'[plugins]\nenable = ["scripted"]\n{extra}'
    )
    return cfg


def invoke(*args: str | Path) -> Any:
    return runner.invoke(app, [str(a) for a in args], env=ENV)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def saved_session(tmp_path: Path, agent_id: str = "a") -> Path:
    cfg = agent(tmp_path / "first", "answer", [{"text": "hello"}], agent_id)
    session = tmp_path / "s.json"
    result = invoke("run", cfg, "first", "--session", session, "-q")
    assert result.exit_code == 0, result.output
    return session


# ---------------------------------------------------------------- in process


@pytest.mark.parametrize(
    ("content", "says"),
    [
        (b'{"format": "greenroom.session/1", "agent": "a", "mess', "not valid JSON: Unterminated string"),
        (b'{"format": "greenroom.session/1", "agent": "a", "messages": ["\xe9"]}', "not UTF-8 text (byte 0xe9"),
        (
            b'{"format": "greenroom.session/1", "agent": "a", "messages": [{"role": "user", "is_error": "no"}]}',
            "messages[0].is_error: 'no' is not of type 'boolean'",
        ),
        (b'{"format": "chat/2", "messages": []}', "not a greenroom session file (format 'chat/2'"),
    ],
    ids=["truncated", "not UTF-8", "a field of the wrong type", "another format"],
)
def test_a_broken_session_file_stops_the_run_with_exit_2_and_is_left_untouched(
    tmp_path: Path, content: bytes, says: str
) -> None:
    cfg = agent(tmp_path, "answer", [{"text": "hello"}])
    session = tmp_path / "s.json"
    session.write_bytes(content)
    result = invoke("run", cfg, "hi", "--session", session, "-q")
    assert result.exit_code == 2, result.output
    assert f"error: {session}: " in result.output and says in result.output
    assert "Traceback" not in result.output and "hello" not in result.output  # the model was never called
    assert session.read_bytes() == content


def test_another_agents_session_is_refused_naming_both_ids_and_taken_over_on_purpose(tmp_path: Path) -> None:
    session = saved_session(tmp_path, agent_id="a")
    before = session.read_bytes()
    other = agent(tmp_path / "other", "answer", [{"text": "mine now"}], agent_id="b")
    refused = invoke("run", other, "second", "--session", session, "-q")
    assert refused.exit_code == 2, refused.output
    assert (
        f"error: {session}: this session belongs to agent 'a', not to this runtime's agent 'b'; "
        "--take-over continues it as agent 'b'"
    ) in refused.output
    assert session.read_bytes() == before

    taken = invoke("run", other, "second", "--session", session, "--take-over", "-q")
    assert taken.exit_code == 0, taken.output
    doc = json.loads(session.read_text())
    assert doc["agent"] == "b" and doc["runs"] == 2
    assert [m["content"] for m in doc["messages"]] == ["first", "hello", "second", "mine now"]


def test_a_session_held_by_another_process_fails_at_once_naming_its_pid(tmp_path: Path) -> None:
    cfg = agent(tmp_path, "answer", [{"text": "hello"}])
    session = tmp_path / "s.json"
    with FileHold(session):  # as another run holds it (flock: per open file, so this process counts as another)
        result = invoke("run", cfg, "hi", "--session", session, "-q")
    assert result.exit_code == 75, result.output
    assert f"error: session {session} is in use (pid {os.getpid()}); --wait SECONDS waits for it" in result.output
    assert not session.exists()


def test_a_bare_session_name_lives_in_the_session_dir_beside_the_config(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    cfg = agent(tmp_path / "conf", "answer", [{"text": "one"}, {"text": "two"}], extra='[session]\ndir = "sessions"\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    for n in (1, 2):
        result = invoke("run", cfg, f"input {n}", "--session", "support.json", "-q")
        assert result.exit_code == 0, result.output
    kept = tmp_path / "conf" / "sessions" / "support.json"
    assert json.loads(kept.read_text())["runs"] == 2  # the second run resumed the first
    assert mode(kept) == 0o600
    assert list(elsewhere.iterdir()) == []
    # a name with a folder in it is where it says, relative to the current directory
    assert invoke("run", cfg, "x", "--session", "./here.json", "-q").exit_code == 0
    assert json.loads((elsewhere / "here.json").read_text())["messages"][0]["content"] == "x"


def test_a_trace_that_cannot_be_written_is_named_without_a_traceback(tmp_path: Path) -> None:
    cfg = agent(tmp_path, "answer", [{"text": "hello"}])
    (tmp_path / "a-file").write_text("not a folder")
    result = invoke("run", cfg, "hi", "--trace", tmp_path / "a-file" / "t.jsonl")
    assert result.exit_code == 2, result.output
    assert f"error: {tmp_path / 'a-file' / 't.jsonl'}: cannot write the trace: File exists" in result.output


# ---------------------------------------------------------------- real processes


def start(cfg: Path, text: str, *args: str | Path, marker: Path | None = None) -> subprocess.Popen[str]:
    env = {**os.environ, **ENV, "GR_MARKER": str(marker or cfg.parent / "marker")}
    return subprocess.Popen(
        [sys.executable, "-m", "greenroom.cli", "run", str(cfg), text, *map(str, args)],
        cwd=cfg.parent,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def until_started(marker: Path, proc: subprocess.Popen[str]) -> None:
    """Wait for the blocking tool to say it started (the run is then inside the tool)."""
    deadline = time.monotonic() + 60
    while not marker.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "the tool never started"
        time.sleep(0.02)


def trace_kinds(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


@pytest.mark.slow
@pytest.mark.parametrize("blocking_tool", ["wait_async", "wait_sync"])
def test_one_ctrl_c_ends_the_run_cleanly_and_the_session_keeps_everything(tmp_path: Path, blocking_tool: str) -> None:
    cfg = agent(tmp_path, "block", [{"tool_calls": [{"name": blocking_tool, "arguments": {}}]}, {"text": "late"}])
    marker, session, trace = tmp_path / "marker", tmp_path / "s.json", tmp_path / "t.jsonl"
    proc = start(cfg, "please wait", "--session", session, "--trace", trace)
    until_started(marker, proc)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert f"run cancelled (Ctrl-C); session saved to {session}" in err
    assert "Traceback" not in err
    events = trace_kinds(trace)
    assert events[0]["kind"] == "run_start"
    assert events[-1]["kind"] == "run_end" and events[-1]["stop_reason"] == "cancelled"
    doc = json.loads(session.read_text())
    assert doc["runs"] == 1
    roles = [(m["role"], m["content"], m["is_error"]) for m in doc["messages"]]
    assert roles == [
        ("user", "please wait", False),
        ("assistant", "", False),
        ("tool", f"tool {blocking_tool!r} cancelled before it finished", True),
    ]
    assert mode(session) == mode(trace) == mode(lock_path(session)) == 0o600


@pytest.mark.slow
def test_runs_on_one_session_never_lose_a_conversation(tmp_path: Path) -> None:
    blocker = agent(tmp_path, "block", [{"tool_calls": [{"name": "wait_async", "arguments": {}}]}])
    quick = agent(tmp_path, "quick", [{"text": "answered"}])
    marker, session = tmp_path / "marker", tmp_path / "s.json"
    first = start(blocker, "first", "--session", "s.json")
    until_started(marker, first)

    second = start(quick, "second", "--session", "s.json")
    out, err = second.communicate(timeout=60)
    assert second.returncode == 75, err
    assert f"session s.json is in use (pid {first.pid}); --wait SECONDS waits for it" in err

    third = start(quick, "third", "--session", "s.json", "--wait", "120", "-q")
    assert third.stderr is not None
    heard = third.stderr.readline()  # it says so before it waits: the first run still holds the file
    assert f"session s.json is in use (pid {first.pid}); waiting up to 120 s" in heard, heard

    first.send_signal(signal.SIGINT)
    _, err = first.communicate(timeout=60)
    assert first.returncode == 130, err
    out, err = third.communicate(timeout=60)
    assert third.returncode == 0, err
    assert out.strip() == "answered"
    doc = json.loads(session.read_text())
    assert doc["runs"] == 2
    assert [m["content"] for m in doc["messages"] if m["role"] == "user"] == ["first", "third"]
    assert doc["messages"][-1]["content"] == "answered"


@pytest.mark.slow
@pytest.mark.parametrize("problem", ["not UTF-8", "another agent"])
def test_a_session_that_cannot_be_resumed_exits_2_without_a_traceback(tmp_path: Path, problem: str) -> None:
    cfg = agent(tmp_path, "answer", [{"text": "hello"}], agent_id="b")
    session = tmp_path / "s.json"
    doc = {"format": "greenroom.session/1", "agent": "a", "runs": 1, "messages": [{"role": "user", "content": "hi"}]}
    content = json.dumps(doc).encode()
    if problem == "not UTF-8":
        content = content.replace(b"hi", b"h\xffi")
    session.write_bytes(content)
    proc = start(cfg, "again", "--session", session)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 2, err
    assert "Traceback" not in err and "hello" not in out
    assert str(session) in err
    assert ("not UTF-8 text" if problem == "not UTF-8" else "belongs to agent 'a'") in err
    assert session.read_bytes() == content
