"""Benchmark of the priors-persistence stores: saves per second and load latency.

For SQLite (one file) and PostgreSQL (when a URL is given), with 1, 4 and 16 concurrent
writer processes: each writer folds a session into the same agent's priors (a 200-tool
document, the real ``fold_document`` inside the store's atomic update), while one
reader process loads the document in a loop (read + validation, what RunStart does).
Ratios are against the 1-writer baseline of the same run. Every case also checks that
the store counted exactly writers x saves sessions (no lost update).

    python benchmarks/priors.py [--saves 150] [--writers 1,4,16] [--postgres-url URL] [--figures]

PostgreSQL is taken from --postgres-url, else GREENROOM_TEST_POSTGRES_URL; without one
it is skipped with a note (start one with: eval "$(bash .ci/postgres.sh)"). ``--figures``
writes the results to docs/figures/priors_stores.json and rewrites docs/priors.md's
table of them (``benchmarks/figures.py``).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import os
import platform
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from greenroom_priors import KEY, Observation, check_document, fold_document, open_store
from greenroom_priors.stores import builtin_factories, redact

TOOLS = [f"tool_{i:03d}" for i in range(200)]


def observation(rng: random.Random) -> Observation:
    used = rng.sample(TOOLS, 8)
    return Observation(presence={n: rng.choice((0.25, 0.5, 1.0)) for n in used}, counts={n: 1 for n in used})


def writer(url: str, agent: str, saves: int, start: Any, seed: int) -> None:
    store = open_store(url, builtin_factories())
    store.read(agent, KEY)  # connect before the clock starts
    rng = random.Random(seed)
    start.wait()  # barrier: every process is connected, the parent starts the clock
    for _ in range(saves):
        obs = observation(rng)
        store.update(agent, KEY, lambda cur, obs=obs: fold_document(cur, obs, now="2025-01-01T00:00:00Z"))
    store.close()


def reader(url: str, agent: str, start: Any, stop: Any, out: Any) -> None:
    store = open_store(url, builtin_factories())
    store.read(agent, KEY)
    latencies: list[float] = []
    start.wait()
    while not stop.is_set():
        t0 = time.perf_counter()
        check_document(store.read(agent, KEY), "bench")
        latencies.append(time.perf_counter() - t0)
    store.close()
    out.put(latencies)


def run_case(url: str, writers: int, saves: int) -> dict[str, float]:
    agent = f"bench-{uuid.uuid4().hex[:8]}"
    store = open_store(url, builtin_factories())
    rng = random.Random(0)
    for _ in range(20):  # a realistic history: most of the 200 tools already known
        obs = Observation(presence={n: rng.random() for n in rng.sample(TOOLS, 60)})
        store.update(agent, KEY, lambda cur, obs=obs: fold_document(cur, obs, now="2025-01-01T00:00:00Z"))
    store.close()
    ctx = mp.get_context("spawn")
    start = ctx.Barrier(writers + 2)  # writers, reader, parent: the clock starts when all are ready
    stop, out = ctx.Event(), ctx.Queue()
    procs = [ctx.Process(target=writer, args=(url, agent, saves, start, i)) for i in range(writers)]
    read_proc = ctx.Process(target=reader, args=(url, agent, start, stop, out))
    for p in [*procs, read_proc]:
        p.start()
    start.wait()
    t0 = time.perf_counter()
    for p in procs:
        p.join()
    wall = time.perf_counter() - t0
    stop.set()
    latencies = out.get()
    read_proc.join()
    if any(p.exitcode for p in procs):
        raise SystemExit(f"a writer failed on {redact(url)}")
    store = open_store(url, builtin_factories())
    doc = store.read(agent, KEY)
    store.delete(agent, KEY)
    store.close()
    assert doc is not None
    lost = 20 + writers * saves - doc["sessions"]
    lat = sorted(latencies)
    return {
        "saves": writers * saves,
        "wall": wall,
        "rate": writers * saves / wall,
        "p50": statistics.median(lat) * 1000,
        "p95": lat[int(0.95 * (len(lat) - 1))] * 1000,
        "lost": lost,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--saves", type=int, default=150, help="saves per writer process")
    ap.add_argument("--writers", default="1,4,16", help="comma-separated writer counts")
    ap.add_argument("--postgres-url", default=os.environ.get("GREENROOM_TEST_POSTGRES_URL"))
    ap.add_argument("--figures", action="store_true", help="write docs/figures/priors_stores.json and the table")
    args = ap.parse_args()
    counts = [int(w) for w in args.writers.split(",")]
    console = Console(width=130)
    tmp = Path(tempfile.mkdtemp(prefix="greenroom-bench-"))
    # 16 writers on a busy 2-core machine can wait past the default 10 s for the lock: a wait, not a failure
    backends = [("sqlite", f"sqlite://{tmp / 'priors.sqlite3'}?timeout=120")]
    if args.postgres_url:
        backends.append(("postgresql", args.postgres_url))
    else:
        console.print(
            "[yellow]PostgreSQL skipped:[/] no --postgres-url and GREENROOM_TEST_POSTGRES_URL unset "
            '(start one with: eval "$(bash .ci/postgres.sh)")'
        )
    table = Table(title=f"priors store: {args.saves} saves per writer, 200-tool document, 1 concurrent reader")
    for col in (
        "store",
        "writers",
        "saves",
        "saves/s",
        "x 1 writer",
        "load p50 ms",
        "load p95 ms",
        "p50 x 1 writer",
        "lost",
    ):
        table.add_column(col, justify="left" if col == "store" else "right")
    load = os.getloadavg()[0]  # a shared machine's other work shows in every figure: said with them
    stores: dict[str, list[dict[str, float]]] = {}
    for name, url in backends:
        base: dict[str, float] | None = None
        for w in counts:
            r = run_case(url, w, args.saves)
            stores.setdefault(name, []).append({"writers": w, **{k: round(v, 4) for k, v in r.items()}})
            base = base or r
            table.add_row(
                name,
                str(w),
                str(int(r["saves"])),
                f"{r['rate']:.0f}",
                f"{r['rate'] / base['rate']:.2f}",
                f"{r['p50']:.3f}",
                f"{r['p95']:.3f}",
                f"{r['p50'] / base['p50']:.2f}",
                str(int(r["lost"])),
            )
    console.print(table)
    machine = describe_machine(args.postgres_url, load)
    console.print(f"[dim]{machine}[/]")
    if args.figures:
        import figures as docs_figures  # beside this script

        figures = {"settings": {"saves": args.saves, "writers": counts}, "machine": machine, "stores": stores}
        console.print(f"written {docs_figures.save('priors_stores', figures)}")
        docs_figures.main([])


def describe_machine(postgres_url: str | None, load: float) -> str:
    """Where the figures were measured: CPUs and their load, OS, Python, SQLite and
    PostgreSQL versions."""
    text = (
        f"{os.cpu_count()} CPU(s) at load {load:.1f} when it started, {platform.system()} {platform.release()}, "
        f"Python {platform.python_version()}, SQLite {sqlite3.sqlite_version}"
    )
    if postgres_url:
        import psycopg

        with psycopg.connect(postgres_url) as conn:
            row = conn.execute("SHOW server_version").fetchone()
        text += f", PostgreSQL {row[0].split()[0] if row else '?'} on loopback"
    return text


if __name__ == "__main__":
    main()
