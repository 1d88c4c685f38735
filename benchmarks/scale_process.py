"""The new-process measurements of ``benchmarks/scale.py``: what a user waits for when a
command starts, and what it holds in memory.

Each child runs with ``GREENROOM_HOME`` in a temporary folder: "cold" is a fresh folder
(no disk cache of any catalog), "warm" the same folder after a run has filled it. The
operating system's file cache is warm in both (the catalog file was just written). A
child's wall time and peak resident memory come from ``os.wait4`` in a small launcher
process (``LAUNCHER``) that starts it. On Linux a process keeps the peak memory of the one
that forked it across ``exec``, so a command started straight from this benchmark, which
holds catalogs of 100,000 tools, would report the benchmark's own peak.
"""

from __future__ import annotations

import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

RSS_UNIT = 1 if sys.platform == "darwin" else 1024  # ru_maxrss is bytes on macOS, KiB on Linux

TOKENIZER_LOAD = (
    "import time; started = time.perf_counter(); from greenroom.tokens.counting import count_tokens; "
    "count_tokens('hello world'); print(time.perf_counter() - started)"
)


@dataclass
class Child:
    """One finished child process."""

    seconds: float
    peak_mb: float
    returncode: int
    stdout: str
    stderr: str


class ChildFailed(RuntimeError):
    """A child exited with an error; the message holds its last lines."""


LAUNCHER = """
import json, os, subprocess, sys, time
report, cmd = sys.argv[1], sys.argv[2:]
started = time.perf_counter()
proc = subprocess.Popen(cmd)
_, status, usage = os.wait4(proc.pid, 0)
seconds = time.perf_counter() - started
with open(report, "w") as out:
    json.dump({"seconds": seconds, "maxrss": usage.ru_maxrss}, out)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def run_child(cmd: list[str], env: dict[str, str], timeout: float = 600) -> Child:
    """Run ``cmd`` to the end, through ``LAUNCHER``: its wall time and its own peak RSS."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err, tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "usage.json"
        launcher = [sys.executable, "-c", LAUNCHER, str(report), *cmd]
        proc = subprocess.Popen(
            launcher, env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=err, start_new_session=True
        )
        # a hung child must not hang the benchmark: its whole process group goes
        killer = threading.Timer(timeout, os.killpg, (proc.pid, signal.SIGKILL))
        killer.start()
        try:
            proc.wait()
        finally:
            killer.cancel()
        out.seek(0)
        err.seek(0)
        stdout = out.read().decode("utf-8", "replace")
        stderr = err.read().decode("utf-8", "replace")
        usage = json.loads(report.read_text()) if report.exists() else {"seconds": float("nan"), "maxrss": 0}
    return Child(usage["seconds"], usage["maxrss"] * RSS_UNIT / 2**20, proc.returncode, stdout, stderr)


def checked(cmd: list[str], env: dict[str, str]) -> Child:
    child = run_child(cmd, env)
    if child.returncode != 0:
        tail = "\n".join((child.stderr or child.stdout).strip().splitlines()[-6:])
        raise ChildFailed(f"exit {child.returncode}: {tail}")
    return child


def _env(home: str) -> dict[str, str]:
    return {**os.environ, "GREENROOM_HOME": home, "COLUMNS": "80", "NO_COLOR": "1"}


def greenroom(*args: str) -> list[str]:
    return [sys.executable, "-m", "greenroom.cli", *args]


def session_start(config: Path, repeat: int) -> dict[str, Any]:
    """``greenroom run CONFIG hi`` (the scripted model answers at once) in a new process,
    with cold and warm disk caches: medians of wall time, and peak memory."""
    cmd = greenroom("run", str(config), "hi")
    cold: list[Child] = []
    warm: list[Child] = []
    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="greenroom-scale-home-") as home:
            cold.append(checked(cmd, _env(home)))
            warm.append(checked(cmd, _env(home)))
    return {
        "cold_ms": statistics.median(c.seconds for c in cold) * 1000,
        "warm_ms": statistics.median(c.seconds for c in warm) * 1000,
        "cold_peak_mb": max(c.peak_mb for c in cold),
        "warm_peak_mb": max(c.peak_mb for c in warm),
        "peak_mb": max(c.peak_mb for c in [*cold, *warm]),
    }


def startup(repeat: int) -> dict[str, Any]:
    """Tokenizer load and ``greenroom --help``, each in a fresh process, against
    ``python -c "import pluggy"``, taken in turns so load on the machine hits all alike."""
    base_cmd = [sys.executable, "-c", "import pluggy"]
    token_cmd = [sys.executable, "-c", TOKENIZER_LOAD]
    help_cmd = greenroom("--help")
    with tempfile.TemporaryDirectory(prefix="greenroom-scale-home-") as home:
        env = _env(home)
        for cmd in (base_cmd, token_cmd, help_cmd):  # warm the file cache and .pyc files
            checked(cmd, env)
        base: list[float] = []
        token_wall: list[float] = []
        token_load: list[float] = []
        helps: list[float] = []
        for _ in range(repeat):
            base.append(checked(base_cmd, env).seconds)
            child = checked(token_cmd, env)
            token_wall.append(child.seconds)
            token_load.append(float(child.stdout.strip().splitlines()[-1]))
            helps.append(checked(help_cmd, env).seconds)
    pluggy = statistics.median(base)
    return {
        "pluggy_ms": pluggy * 1000,
        "tokenizer_load_ms": statistics.median(token_load) * 1000,
        "tokenizer_process_ms": statistics.median(token_wall) * 1000,
        "tokenizer_ratio": statistics.median(token_wall) / pluggy,
        "help_ms": statistics.median(helps) * 1000,
        "help_ratio": statistics.median(helps) / pluggy,
    }
