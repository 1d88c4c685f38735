"""A sandbox whose greenroom is gone ends by itself: the harness stops when its stdin
closes (a script waiting on a tool), and the processor-time limit greenroom sets once Deno
has started ends a script that spins where no deadline reaches it any more."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest

from greenroom_code.sandbox import Limits, _limit, command

pytestmark = pytest.mark.slow


def started(deno: str, tmp_path: Path, code: str) -> subprocess.Popen[bytes]:
    """The harness as greenroom starts it, given ``code``; the caller plays greenroom."""
    proc = subprocess.Popen(
        command(deno, Limits()),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        cwd=tmp_path,
        env={"DENO_DIR": str(tmp_path / "deno"), "DENO_NO_UPDATE_CHECK": "1", "NO_COLOR": "1"},
        start_new_session=True,
    )
    assert proc.stdout is not None and proc.stdin is not None
    assert proc.stdout.readline() == b'{"t":"ready"}\n'
    return proc


def send(proc: subprocess.Popen[bytes], code: str) -> None:
    assert proc.stdin is not None
    proc.stdin.write(json.dumps({"code": code, "token": "t", "console_chars": 100}).encode() + b"\n")
    proc.stdin.flush()


def test_a_script_waiting_on_a_tool_ends_when_greenroom_is_gone(deno: str, tmp_path: Path) -> None:
    proc = started(deno, tmp_path, "")
    try:
        send(proc, "setInterval(() => {}, 1000); return await tools.slow({})")  # a timer keeps it alive
        assert proc.stdout is not None and b'"t":"call"' in proc.stdout.readline()
        assert proc.stdin is not None
        proc.stdin.close()  # what greenroom's death looks like from the sandbox
        assert proc.wait(timeout=10) == 1
    finally:
        proc.kill()
        proc.wait()


def test_a_spinning_script_is_ended_by_its_processor_time_limit(deno: str, tmp_path: Path) -> None:
    proc = started(deno, tmp_path, "")
    try:
        _limit(proc.pid, Limits(cpu_seconds=1))
        send(proc, "while (true) {}")  # greenroom never reads again: no deadline of its own ends this
        assert proc.wait(timeout=15) in (-signal.SIGXCPU, -signal.SIGKILL)
    finally:
        proc.kill()
        proc.wait()
