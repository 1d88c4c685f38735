"""Scale benchmark: greenroom with catalogs of 1k, 10k and 100k tools (issue 14).

Catalogs are built at run time from ``../shared/datasets`` (every tool kept with its
description and schema, repeated under unique names such as ``name__r7``, grouped by
domain or server; see ``scale_catalog``) into a temporary folder. At each size, every
figure is a ratio against a baseline measured in the same run:

- ToolSearch p50, through the runtime, against plain ``bm25s`` over the same texts;
- per-step runtime overhead of each strategy (dispatch, inject, native) against a bare loop;
- session start of ``greenroom run CONFIG hi`` in a new process, cold and warm disk
  caches, against the smallest size: a run whose model answers at once, and one whose
  model makes one ToolSearch first (which loads or builds the search index);
- peak memory of those runs against the smallest size;
- an unknown tool name's error against a known tool's call and a dict lookup;
- the listing's tokens against ``listing_budget``, and the groups and tools it names;
- once: a runtime of 50,000 tools built, run and closed three times in one process, each
  build against the first, with the objects the garbage collector still tracks after each;
- once: tokenizer load and ``greenroom --help`` against ``python -c "import pluggy"``.

A measurement that fails is recorded (``failed [n]`` in its table, the error below it)
and the rest go on.

    python benchmarks/scale.py [--sizes 1000,10000,100000] [--quick] [--json [PATH]]
                               [--plot docs/img/scale.png] [--only search,listing]
    python benchmarks/scale.py --load results.json [--plot scale.png]
"""

from __future__ import annotations

import argparse
import functools
import gc
import json
import os
import platform
import sys
import tempfile
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from scale_catalog import DATASETS, Catalog, available, build, write_config
from scale_measure import STRATEGIES, bare_step, listing, misspelled, search, step_overhead
from scale_process import rebuild, session_start, startup
from scale_report import plot, print_report

PER_SIZE = ("listing", "search", "misspelled", "steps", "session")
SESSION_QUERY = "book a flight to paris"  # the searching session's one ToolSearch
MEASUREMENTS = (*PER_SIZE, "rebuild", "startup")


@dataclass(frozen=True)
class Settings:
    """How much of each measurement to take."""

    searches: int = 200
    steps: int = 100
    repeat: int = 3
    session_repeat: int = 5
    startup_repeat: int = 15
    rebuild_size: int = 50_000  # the runtime built three times in one process
    rebuild_repeat: int = 3
    misses: int = 50
    step_seconds: float = 20.0  # a slow strategy is timed over fewer steps, never longer


QUICK = Settings(
    searches=20,
    steps=20,
    repeat=1,
    session_repeat=1,
    startup_repeat=3,
    misses=10,
    step_seconds=5.0,
    rebuild_size=5_000,
    rebuild_repeat=1,
)


def attempt(run: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``run()``, or what went wrong and where (the innermost frames), as a result."""
    try:
        return run()
    except Exception as exc:
        frames = traceback.extract_tb(exc.__traceback__)[-3:]
        where = [f"{Path(f.filename).name}:{f.lineno} in {f.name}" for f in frames]
        text = " ".join(str(exc).split())
        return {"error": f"{type(exc).__name__}: {text[:300]}", "where": where}


def listing_budget() -> int:
    from greenroom_deferred import DeferredConfig

    return int(DeferredConfig().listing_budget)


def measure_size(
    catalog: Catalog, only: set[str], s: Settings, bare: float, step: Callable[[str], None]
) -> dict[str, Any]:
    """Every per-size measurement of ``catalog``; ``step`` names each as it starts."""
    out: dict[str, Any] = {"catalog": {"tools": len(catalog.names), "groups": len(catalog.groups)}}
    if "listing" in only:
        step("listing")
        out["listing"] = attempt(lambda: listing(catalog, listing_budget()))
    if "search" in only:
        step(f"ToolSearch x{s.searches}")
        out["search"] = attempt(lambda: search(catalog, s.searches))
    if "misspelled" in only:
        step("unknown tool names")
        out["misspelled"] = attempt(lambda: misspelled(catalog, s.misses))
    if "steps" in only:
        out["steps"] = {}
        for strategy in STRATEGIES:
            step(f"steps, {strategy}")
            out["steps"][strategy] = attempt(
                functools.partial(step_overhead, catalog, strategy, s.steps, s.repeat, bare, s.step_seconds)
            )
            gc.collect()
    if "session" in only:
        step("session start in new processes")
        out["session"] = attempt(lambda: session_start(write_config(catalog, "run"), s.session_repeat))
        step("session with a search in new processes")
        searching = write_config(catalog, "run-search", search=SESSION_QUERY)
        out["session_search"] = attempt(lambda: session_start(searching, s.session_repeat, searches=True))
    gc.collect()
    return out


def run(sizes: list[int], only: set[str], s: Settings, console: Console) -> dict[str, Any]:
    results: dict[str, Any] = {
        "sizes": sizes,
        "settings": s.__dict__,
        "machine": {"python": platform.python_version(), "platform": platform.platform(), "cpus": os.cpu_count()},
        "started": time.strftime("%Y-%m-%d %H:%M:%S"),
        "load_average": os.getloadavg()[0],  # other work on the machine makes every figure noisier
        "by_size": {},
    }
    per_measurement = {"steps": len(STRATEGIES), "session": 2}  # the rest take one unit each
    units = len(sizes) * sum(per_measurement.get(m, 1) for m in PER_SIZE if m in only)
    units += len(sizes) + ("startup" in only) + ("steps" in only) + ("rebuild" in only)
    columns = (TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with tempfile.TemporaryDirectory(prefix="greenroom-scale-") as tmp, Progress(*columns, console=console) as bar:
        task = bar.add_task("starting", total=units)
        home = os.environ.get("GREENROOM_HOME")
        os.environ["GREENROOM_HOME"] = str(Path(tmp) / "home")  # the user's caches and priors stay untouched
        try:
            if "steps" in only:
                bar.update(task, description="bare loop")
                results["bare_step_us"] = bare_step(s.steps, max(s.repeat, 3)) * 1e6
                bar.advance(task)
            bare = results.get("bare_step_us", 0.0) / 1e6
            for size in sizes:

                def step(what: str, size: int = size) -> None:
                    bar.update(task, description=f"{size:,} tools: {what}")
                    bar.advance(task)

                bar.update(task, description=f"{size:,} tools: building the catalog")
                catalog = build(size, Path(tmp) / str(size))
                bar.advance(task)
                results["by_size"][str(size)] = measure_size(catalog, only, s, bare, step)
                del catalog
            if "rebuild" in only:
                bar.update(task, description=f"{s.rebuild_size:,} tools: a runtime built 3 times in one process")
                catalog = build(s.rebuild_size, Path(tmp) / f"rebuild-{s.rebuild_size}")
                config = write_config(catalog, "rebuild", search=SESSION_QUERY)
                results["rebuild"] = {"tools": s.rebuild_size, **attempt(lambda: rebuild(config, s.rebuild_repeat))}
                del catalog
                bar.advance(task)
            if "startup" in only:
                bar.update(task, description="start-up: tokenizer, --help, import pluggy")
                results["startup"] = attempt(lambda: startup(s.startup_repeat))
                bar.advance(task)
        finally:
            if home is None:
                os.environ.pop("GREENROOM_HOME", None)
            else:
                os.environ["GREENROOM_HOME"] = home
    return results


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000", help="comma-separated catalog sizes")
    ap.add_argument("--quick", action="store_true", help="few repetitions: a smoke run, not figures to quote")
    ap.add_argument(
        "--json", nargs="?", const="-", metavar="PATH", help="write the results as JSON (- or no PATH: stdout)"
    )
    ap.add_argument("--plot", type=Path, metavar="PNG", help="write a plot of each cost against catalog size")
    ap.add_argument("--load", type=Path, metavar="JSON", help="report (and plot) the results of an earlier --json run")
    ap.add_argument(
        "--only", default=",".join(MEASUREMENTS), help=f"comma-separated subset of {', '.join(MEASUREMENTS)}"
    )
    args = ap.parse_args(argv)
    sizes = [int(x.replace("_", "")) for x in args.sizes.split(",") if x.strip()]
    only = {m.strip() for m in args.only.split(",") if m.strip()}
    unknown = only - set(MEASUREMENTS)
    if unknown:
        ap.error(f"unknown measurement(s): {', '.join(sorted(unknown))}")
    to_stdout = args.json == "-"
    err = Console(stderr=True)
    if args.load:
        results = json.loads(args.load.read_text(encoding="utf-8"))
    elif not available():
        err.print(f"skipped: no datasets under {DATASETS} (set GREENROOM_DATASETS)")
        return 0
    else:
        results = run(sizes, only, QUICK if args.quick else Settings(), err)
    if args.json and not args.load:
        text = json.dumps(results, indent=2)
        if to_stdout:
            print(text)
        else:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(text + "\n", encoding="utf-8")
    if not to_stdout:
        print_report(Console(), results)
    if args.plot:
        plot(results, args.plot)
        err.print(f"plot written to {args.plot}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
