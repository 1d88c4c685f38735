"""Benchmark of the side build: a large corpus's first search, with its keyword index and
the last quarter of its BM25 table built by a child process while this one builds the rest
(``parallel_build_min_tools``), against the same search with everything built here.

The catalog is the datasets' tools repeated under new names (``scale_catalog``) to
``--size`` tools. Each round builds a fresh engine (nothing shared, no disk store) and
times its first search, turning the side build on and off in turns, so a busy machine
slows both alike. Printed: the medians, their ratio, the child's peak memory, and whether
both answers were the same. The side build runs whatever the load (a search decides by
the load average): on a busy machine this shows what it would cost there.

    python benchmarks/side_build.py [--size 100000] [--rounds 5]
"""

from __future__ import annotations

import argparse
import os
import pickle
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))

from scale_catalog import available, build

from greenroom import SearchQuery, ToolDescriptor
from greenroom.tools.catalog import read_catalog
from greenroom_ranking import RankingConfig, RankingEngine
from greenroom_ranking.offload import side

QUERY = "book a flight to paris"


def child_peak_mb(tools: Sequence[ToolDescriptor], folder: Path) -> float:
    """The child's peak memory on these tools' inputs: run by a small go-between process,
    since a child forked from this one counts this one's pages as its own until it execs."""
    inputs = folder / "inputs.pickle"
    cache = RankingEngine(RankingConfig(index_cache=False), shared=False).cache
    jobs, _ = cache.side_jobs(cache.view(tools).corpus, ("bm25", "text"))  # the jobs a search gives
    inputs.write_bytes(pickle.dumps([j.wire() for j in jobs]))
    answers = folder / "answers"
    answers.mkdir()
    script = (
        "import resource, subprocess, sys; "
        f"subprocess.run({[*side.CHILD, str(answers)]!r}, stdin=open({str(inputs)!r}, 'rb'), "
        "stdout=subprocess.DEVNULL, check=True); "
        "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
    )
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    return int(out.stdout.strip()) / 1024


def first_search(tools: Sequence[ToolDescriptor], side: bool) -> tuple[float, list[str]]:
    config = RankingConfig(parallel_build_min_tools=1 if side else 0, index_cache=False)
    engine = RankingEngine(config, shared=False)
    start = time.perf_counter()
    found = engine.search(SearchQuery.parse(QUERY, max_results=10), tools)
    seconds = time.perf_counter() - start
    if side and engine.cache.side_builds != {"text": 1, "bm25": 1}:
        raise SystemExit("the side build did not run (one CPU?)")
    return seconds, [s.name for s in found]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    console = Console()
    if not available():
        console.print("../shared/datasets not present: nothing to measure")
        return 0
    with tempfile.TemporaryDirectory() as folder:
        os.environ["GREENROOM_HOME"] = str(Path(folder) / "home")  # the catalog's kept read goes here
        catalog = build(args.size, Path(folder))
        tools = list(read_catalog(catalog.path).descriptors)
        child_mb = child_peak_mb(tools, Path(folder))
    console.print(f"load average {os.getloadavg()[0]:.1f} on {side.usable_cpus()} CPUs")
    side.spare_cpu = lambda: True  # measured whatever the load: a busy machine shows what it costs then
    times: dict[bool, list[float]] = {True: [], False: []}
    answers: dict[bool, list[str]] = {}
    with console.status("first searches, side build on and off in turns") as status:
        for r in range(args.rounds):
            for aside in (True, False):
                status.update(f"round {r + 1} of {args.rounds}, side build {'on' if aside else 'off'}")
                seconds, answers[aside] = first_search(tools, aside)
                times[aside].append(seconds)
    on, off = statistics.median(times[True]), statistics.median(times[False])
    table = Table(title=f"First search over {len(tools):,} tools, medians of {args.rounds}")
    for column in ("build", "first search s", "x in this process"):
        table.add_column(column, justify="right" if column != "build" else "left")
    table.add_row("everything in this process", f"{off:.2f}", "1.00x")
    table.add_row("with a side build", f"{on:.2f}", f"{on / off:.2f}x")
    console.print(table)
    console.print(f"the child's peak memory: {child_mb:.0f} MB; the same answers: {answers[True] == answers[False]}")
    return 0 if answers[True] == answers[False] else 1


if __name__ == "__main__":
    sys.exit(main())
