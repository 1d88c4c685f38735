"""Sessions lose nothing, through ``greenroom run --session``: a session another process
holds fails at once (exit 75, naming its pid) and resumes whole once it is free; another
agent's session is refused (exit 2) and taken over on purpose; a broken session file is
refused (exit 2) naming the file and what is wrong. A refused run starts nothing (the
trace holds no run), changes no byte of the file, and leaves it free for the next run.

One Ctrl-C ends a run cleanly wherever it is: while the model is thinking, or while a
plugin's gate hangs beside a call that finished: exit 130, the trace ending with
``run_end`` ("cancelled"), the session saved with everything up to that point (the Ctrl-C
of a run inside a tool is ``tests/core/cli/test_session_cli.py``'s)."""

from __future__ import annotations

import json
import os
import signal
import stat
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from greenroom._support.storage import FileHold, lock_path

if TYPE_CHECKING:
    from conftest import Bench, Run

HELLO = [{"text": "hello"}]
SESSION = {"format": "greenroom.session/1", "agent": "a", "runs": 1, "messages": [{"role": "user", "content": "hi"}]}


def session_bytes(**changes: object) -> bytes:
    return json.dumps({**SESSION, **changes}).encode()


def refused(run: Run, session: Path, before: bytes, exit_code: int = 2) -> None:
    """The run was refused before it started, and left the session file as it was."""
    assert run.exit_code == exit_code, run.output
    assert "Traceback" not in run.output
    assert run.trace == [] and run.stdout == ""  # no run started: the model was never called
    assert session.read_bytes() == before


def free(session: Path) -> None:
    """Nothing holds the session: a refused run let go of it."""
    FileHold(session).acquire().release()  # raises FileInUse if held


BROKEN = {
    "truncated": (session_bytes()[:40], "not valid JSON: Unterminated string"),
    "not UTF-8": (session_bytes().replace(b"hi", b"h\xffi"), "not UTF-8 text (byte 0xff at offset"),
    "empty": (b"", "not valid JSON: Expecting value (line 1, column 1)"),
    "an array": (b"[]", "not a greenroom session file: expected a JSON object, got an array"),
    "nested too deeply": (b"[" * 100_000, "not valid JSON: nested too deeply"),
    "a negative run count": (session_bytes(runs=-1), "runs: -1 is less than the minimum of 0"),
    "a message without a role": (session_bytes(messages=[{"content": "hi"}]), "messages[0]: 'role' is a required"),
    "a key this version does not know": (session_bytes(notes="mine"), "('notes' was unexpected)"),
}


@pytest.mark.parametrize(("content", "says"), BROKEN.values(), ids=BROKEN.keys())
def test_a_broken_session_file_is_refused_naming_it_and_left_as_it_was(bench: Bench, content: bytes, says: str) -> None:
    config = bench.agent(HELLO)
    bench.session_file.parent.mkdir(parents=True, exist_ok=True)
    bench.session_file.write_bytes(content)
    run = bench.run(config, "go")
    refused(run, bench.session_file, content)
    assert f"error: {bench.session_file}: " in run.stderr and says in run.stderr
    free(bench.session_file)


@pytest.mark.slow
def test_a_session_in_use_fails_at_once_and_resumes_whole_once_free(bench: Bench) -> None:
    config = bench.agent(HELLO)
    bench.run(config, "hi").ended("final", 0)
    before = bench.session_file.read_bytes()

    with FileHold(bench.session_file):  # this process holds it, as a run in progress would
        run = bench.start(config, "again", "-q").finish()  # a second process
        refused(run, bench.session_file, before, exit_code=75)
        said = f"error: session {bench.session_file} is in use (pid {os.getpid()}); --wait SECONDS waits for it"
        assert said in run.stderr
    again = bench.run(config, "again")
    again.ended("final", 0)
    assert again.session()["runs"] == 2
    assert [m["content"] for m in again.messages()] == ["hi", "hello", "again", "hello"]


def test_another_agents_session_is_refused_and_taken_over_on_purpose(bench: Bench) -> None:
    theirs = bench.agent(HELLO, agent_id="b", name="theirs")
    bench.run(theirs, "hi").ended("final", 0)
    before = bench.session_file.read_bytes()

    ours = bench.agent([{"text": "mine now"}], agent_id="a")
    run = bench.run(ours, "go")
    refused(run, bench.session_file, before)
    said = f"{bench.session_file}: this session belongs to agent 'b', not to this runtime's agent 'a'"
    assert f"error: {said}; --take-over continues it as agent 'a'" in run.stderr
    free(bench.session_file)

    taken = bench.run(ours, "go", "--take-over")
    taken.ended("final", 0)
    assert (taken.session()["agent"], taken.session()["runs"]) == ("a", 2)
    assert [m["content"] for m in taken.messages()] == ["hi", "hello", "go", "mine now"]


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.slow
def test_ctrl_c_while_the_model_thinks_ends_the_run_and_saves_the_input(faulty: Bench) -> None:
    config = faulty.agent(model="stall:", plugins=("faulty",))
    marker = faulty.folder / "marker"
    started = faulty.start(config, "why is checkout slow?", env={"FAULT_MARKER": str(marker)})
    started.when_file_appears(marker)
    started.proc.send_signal(signal.SIGINT)
    run = started.finish()
    run.ended("cancelled", 130)
    assert f"run cancelled (Ctrl-C); session saved to {faulty.session_file}" in run.stderr
    assert run.kinds()[-2:] == ["request", "run_end"]  # it was waiting for the model's answer
    assert run.session()["runs"] == 1
    assert [(m["role"], m["content"]) for m in run.messages()] == [("user", "why is checkout slow?")]
    assert mode(faulty.session_file) == mode(started.trace) == 0o600


@pytest.mark.slow
def test_ctrl_c_while_a_gate_hangs_keeps_the_result_of_the_call_that_finished(faulty: Bench) -> None:
    turn = {"tool_calls": [{"name": "store", "arguments": {"data": {}}}, {"name": "ping", "arguments": {}}]}
    config = faulty.agent([turn, {"text": "never"}], plugins=("faulty",))
    marker = faulty.folder / "marker"
    env = {"FAULT_MARKER": str(marker), "FAULT_HANG": "greenroom_before_tool_execute"}
    started = faulty.start(config, "go", env=env)
    started.when_file_appears(marker)
    started.when_trace_has("tool_result", "ping")  # on a loaded machine ping may still be running
    started.proc.send_signal(signal.SIGINT)
    run = started.finish()
    run.ended("cancelled", 130)
    assert f"run cancelled (Ctrl-C); session saved to {faulty.session_file}" in run.stderr
    results = {name: (m["content"], m["is_error"]) for name, m in run.results().items()}
    assert results == {"ping": ("pong", False), "store": ("tool 'store' cancelled before it finished", True)}
    assert mode(lock_path(faulty.session_file)) == 0o600
