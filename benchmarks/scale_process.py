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


def _search_ms(trace: Path) -> float:
    """How long the run's first ToolSearch took, from its trace (``tool_result``): in a
    cold run, mostly the ranking plugin building its index."""
    for line in trace.read_text(encoding="utf-8").splitlines():
        event = json.loads(line)
        if event.get("kind") == "tool_result" and event.get("tool") == "ToolSearch":
            return float(event["duration_ms"])
    return float("nan")


def session_start(config: Path, repeat: int, *, searches: bool = False) -> dict[str, Any]:
    """``greenroom run CONFIG hi`` (the scripted model answers at once, or ``searches``
    first) in a new process, with cold and warm disk caches: medians of wall time, and
    peak memory; for a searching run also how long its ToolSearch took (``--trace``), and
    the same run in a fresh state folder whose indexes ``greenroom rank index CONFIG``
    built ahead, as a deploy step does ("indexed")."""
    runs: dict[str, list[Child]] = {"cold": [], "warm": [], "indexed": []}
    searched: dict[str, list[float]] = {"cold": [], "warm": [], "indexed": []}
    rank_index: list[float] = []

    def run(kind: str, home: str) -> None:
        trace = Path(home) / f"{kind}.jsonl"
        extra = ["--trace", str(trace)] if searches else []
        runs[kind].append(checked(greenroom("run", str(config), "hi", *extra), _env(home)))
        if searches:
            searched[kind].append(_search_ms(trace))

    for _ in range(repeat):
        with tempfile.TemporaryDirectory(prefix="greenroom-scale-home-") as home:
            run("cold", home)
            run("warm", home)
        if searches:
            with tempfile.TemporaryDirectory(prefix="greenroom-scale-home-") as home:
                rank_index.append(checked(greenroom("rank", "index", str(config)), _env(home)).seconds)
                run("indexed", home)
    cold, warm = runs["cold"], runs["warm"]
    out = {
        "cold_ms": statistics.median(c.seconds for c in cold) * 1000,
        "warm_ms": statistics.median(c.seconds for c in warm) * 1000,
        "cold_peak_mb": max(c.peak_mb for c in cold),
        "warm_peak_mb": max(c.peak_mb for c in warm),
        "peak_mb": max(c.peak_mb for c in [*cold, *warm]),
    }
    if searches:
        out["cold_search_ms"] = statistics.median(searched["cold"])
        out["warm_search_ms"] = statistics.median(searched["warm"])
        out["indexed_search_ms"] = statistics.median(searched["indexed"])
        out["indexed_ms"] = statistics.median(c.seconds for c in runs["indexed"]) * 1000
        out["rank_index_ms"] = statistics.median(rank_index) * 1000
    return out


REBUILD = """
import gc, json, sys, time
import anyio
from greenroom.compose.build import build_runtime

async def session(rt):
    try:
        await rt.session().run("hi")
    finally:
        await rt.aclose()

out = []
for _ in range(int(sys.argv[2])):
    started = time.perf_counter()
    rt = build_runtime(sys.argv[1])
    anyio.run(session, rt)
    seconds = time.perf_counter() - started
    del rt
    gc.collect()
    out.append({"seconds": seconds, "tracked": len(gc.get_objects())})
print(json.dumps(out))
"""


def rebuild(config: Path, repeat: int, builds: int = 3) -> dict[str, Any]:
    """A runtime built, run (one session) and closed ``builds`` times in one new process,
    as a server or a notebook does: the time of each, and the objects the garbage
    collector still tracks after each (what the process kept of the closed ones, which
    every later full collection scans again). The disk caches are warm (a ``greenroom
    run`` of the same config first), so the first build reads what the others share in
    memory. Medians of ``repeat`` processes."""
    cmd = [sys.executable, "-c", REBUILD, str(config), str(builds)]
    with tempfile.TemporaryDirectory(prefix="greenroom-scale-home-") as home:
        env = _env(home)
        checked(greenroom("run", str(config), "hi"), env)
        runs = [json.loads(checked(cmd, env).stdout.strip().splitlines()[-1]) for _ in range(repeat)]
    ms = [statistics.median(r[i]["seconds"] for r in runs) * 1000 for i in range(builds)]
    tracked = [int(statistics.median(r[i]["tracked"] for r in runs)) for i in range(builds)]
    return {"build_ms": ms, "tracked": tracked, "ratios": [m / ms[0] for m in ms], "builds": builds}


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
