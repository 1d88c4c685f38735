"""A path greenroom reads or replaces as a file that is a named pipe or a device is a clear
error at once: reading a pipe would wait for a writer forever, reading ``/dev/full``
never ends, and replacing either would replace it. Each case runs in a process of its own,
bounded in time and memory, so that what it guards against cannot take the test run with
it."""

from __future__ import annotations

import os
import resource
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from greenroom._support.storage import NotARegularFile, read_regular_file, write_json_atomic

pytestmark = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")

ENV = {**os.environ, "COLUMNS": "300", "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1"}
WITHIN = 60  # seconds: an answer comes at once, a hang never does


def _bounded_memory() -> None:  # an endless read fails with MemoryError instead of taking the machine
    resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))


def in_a_process(*argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=WITHIN,
        preexec_fn=_bounded_memory,
    )


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "pipe"
    os.mkfifo(path)
    return path


def agent(folder: Path) -> Path:
    (folder / "turns.jsonl").write_text('{"text": "hello"}\n')
    cfg = folder / "agent.toml"
    cfg.write_text('[agent]\nmodel = "scripted:turns.jsonl"\n[plugins]\nenable = ["scripted"]\n')
    return cfg


@pytest.mark.parametrize("kind", ["named pipe", "device"])
def test_a_session_that_is_a_pipe_or_a_device_stops_the_run_at_once(tmp_path: Path, fifo: Path, kind: str) -> None:
    session = fifo if kind == "named pipe" else Path("/dev/full")
    if not session.exists():
        pytest.skip("no /dev/full here")
    run = ["-m", "greenroom.cli", "run", str(agent(tmp_path)), "hi", "--session", str(session)]
    done = in_a_process(*run, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    expected = "a named pipe (FIFO)" if kind == "named pipe" else "a character device"
    assert f"error: {session}: cannot use it as a session file: not a regular file but {expected}" in done.stderr
    assert "Traceback" not in done.stderr and "hello" not in done.stdout  # the model was never called
    assert stat.S_ISFIFO(fifo.stat().st_mode) and not Path(f"{session}.lock").exists()


def test_a_task_file_that_is_a_pipe_or_a_device_is_a_clear_error(tmp_path: Path, fifo: Path) -> None:
    code = (
        "import sys\nfrom greenroom_lab.eval.tasks import TaskFileError, load_tasks\n"
        "for path in sys.argv[1:]:\n"
        "    try:\n        load_tasks(path)\n    except TaskFileError as exc:\n        print(exc)\n"
    )
    devices = [p for p in ("/dev/full", "/dev/zero") if Path(p).exists()]
    done = in_a_process("-c", code, str(fifo), *devices, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == f"{fifo}: cannot read the task file (not a regular file but a named pipe (FIFO))"
    assert lines[1:] == [f"{p}: cannot read the task file (not a regular file but a character device)" for p in devices]


def test_what_would_replace_a_pipe_refuses_and_leaves_it(fifo: Path) -> None:
    with pytest.raises(NotARegularFile, match="not a regular file but a named pipe"):
        write_json_atomic(fifo, {"a": 1})
    assert stat.S_ISFIFO(fifo.stat().st_mode)
    with pytest.raises(NotARegularFile, match="not a regular file but a folder"):
        read_regular_file(fifo.parent)
    link = fifo.parent / "link.json"
    link.symlink_to(fifo.parent / "real.json")
    write_json_atomic(link, {"a": 1})  # a link to a file (missing or not) is written through, as ever
    assert read_regular_file(link) == b'{\n "a": 1\n}' and link.is_symlink()
