"""Runtime overhead by catalog size: per step, at session start, and in a new process.

Catalogs of 1,000, 10,000 and 100,000 tools are built at run time in a temporary folder
from ``../shared/datasets`` (every dataset's tools, then again as ``name__r1``, ``__r2`` ...,
descriptions and schemas kept; synthetic tools when the datasets are absent). Nothing
generated is written in the project.

- **per step**: a runtime over the catalog runs sessions in which the model calls one
  no-op tool per step, with no plugin ("all sent") and with the deferred-tools plugin in
  each strategy (dispatch, inject, native: the model then claims a hosted tool search).
  Per-step overhead is the time from one model call to the next, over S steps, minus a
  bare loop's step (the same model calls and tool runs with no runtime around them),
  measured in the same run; the time to a session's first model call (placing every
  tool, rendering the listing) is its "session start".
- **new process**: ``greenroom run`` of a one-step script over a config with
  ``[tools] catalogs`` and the default plugins, timed from spawn to exit, with the
  child's peak memory; "cold" in an empty ``GREENROOM_HOME``, "warm" when run again (the
  digest cache then holds schema checks and token counts).

Every measurement runs in a child process. ``--baseline DIR`` (a folder holding another
checkout's ``core/`` and ``plugins/``, e.g. ``git archive HEAD core plugins | tar -x -C DIR``)
runs each one for that code too, interleaved, and reports after/before ratios.
``--priors-store URL`` adds the priors-persistence plugin with that store to every
per-step arm (a ``postgresql://`` URL: what the journal of calls costs a step):

    python benchmarks/overhead.py [--sizes 1000 10000 100000] [--steps 100] [--repeat 3]
        [--strategies all-sent dispatch inject native] [--baseline DIR] [--priors-store URL]
        [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
SOURCES = ("seal_tools", "metatool", "github_mcp")
STRATEGIES = ("all-sent", "dispatch", "inject", "native")
CURRENT = "current"


# ------------------------------------------------------------------------------ catalogs
def base_records() -> list[dict[str, Any]]:
    """The datasets' tools (or synthetic ones when the datasets are absent)."""
    out: list[dict[str, Any]] = []
    for name in SOURCES:
        path = DATASETS / name / "tools.jsonl"
        if path.exists():
            out += [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    if out:
        return out
    prop = {"type": "string", "description": "A query string."}
    return [
        {
            "name": f"tool_{i}",
            "description": f"Catalog tool number {i}.",
            "parameters": {"type": "object", "properties": {"q": prop}},
        }
        for i in range(1000)
    ]


def build_catalog(path: Path, size: int, base: list[dict[str, Any]]) -> None:
    seen: set[str] = set()
    with path.open("w", encoding="utf-8") as out:
        for r in range(size // len(base) + 2):
            for record in base:
                name = record["name"] if r == 0 else f"{record['name']}__r{r}"
                if name not in seen:
                    seen.add(name)
                    out.write(json.dumps({**record, "name": name}) + "\n")
                    if len(seen) == size:
                        return


def write_config(folder: Path, size: int) -> Path:
    (folder / "script.jsonl").write_text('{"text": "done"}\n', encoding="utf-8")
    config = folder / f"agent-{size}.toml"
    config.write_text(
        f'[agent]\nid = "overhead-{size}"\nmodel = "scripted:script.jsonl"\nmax_steps = 3\n\n'
        f'[tools]\ncatalogs = ["catalog-{size}.jsonl"]\n',
        encoding="utf-8",
    )
    return config


# ------------------------------------------------------------------------------ workers
def worker_steps(catalog: str, strategy: str, steps: int, repeat: int, priors: str = "") -> dict[str, Any]:
    """Per-step overhead and session start of one setup, in this (child) process."""
    import anyio

    from greenroom import (
        ModelRequest,
        Runtime,  # the public face: a baseline checkout may keep it elsewhere
        ToolCallContext,
        make_plugin_host,
        tool,
    )
    from greenroom.config import AgentConfig
    from greenroom.models import ModelResponse
    from greenroom.providers.scripted import PolicyModel, turn_from_record
    from greenroom.tools import load_catalog

    @tool
    async def noop() -> str:
        """Does nothing."""
        return "ok"

    call = {"tool_calls": [{"name": "noop", "arguments": {}}]}

    class Model(PolicyModel):
        """Calls the no-op tool until the last step, noting when each call came; counts no
        usage (that is the model's side)."""

        native_tool_search = strategy == "native"

        def __init__(self, last: int) -> None:
            super().__init__(lambda r: call if r.step < last else {"text": "done"})
            self.stamps: list[float] = []

        async def complete(self, request: ModelRequest) -> Any:
            self.stamps.append(time.perf_counter())
            return ModelResponse(turn_from_record(self.policy(request), "bench", request.step))

    async def bare(n: int) -> float:
        model, ctx = Model(n), ToolCallContext("c", "r", "noop")
        for step in range(1, n + 1):
            resp = await model.complete(ModelRequest(system=(), tools=(noop.descriptor,), messages=(), step=step))
            for _ in resp.tool_calls:
                await noop.execute({}, ctx)
        return (model.stamps[-1] - model.stamps[0]) / (n - 1)

    plugins: list[Any] = []
    if strategy != "all-sent":
        from greenroom_deferred import DeferredConfig, DeferredToolsPlugin

        plugins.append(DeferredToolsPlugin(DeferredConfig(enabled=True, strategy=strategy)))
    if priors:
        from greenroom_priors import PriorsConfig, PriorsPlugin

        plugins.append(PriorsPlugin(PriorsConfig(store=priors)))
    tools = load_catalog(catalog)
    built = time.perf_counter()
    rt = Runtime(
        model=Model(steps),
        tools=[noop, *tools],
        host=make_plugin_host(records=[], extra=plugins),
        agent=AgentConfig(max_steps=steps + 1),
    )
    build_s = time.perf_counter() - built

    async def session() -> tuple[float, float]:
        """Time to the first model call (the session's start), and then per step: from one
        model call to the next, so what a session pays once stays out of the steps."""
        model = rt.model = Model(steps)
        start = time.perf_counter()
        await rt.session().run("go")
        return model.stamps[0] - start, (model.stamps[-1] - model.stamps[0]) / (steps - 1)

    first = anyio.run(session)[0]  # the first session also fills per-process caches
    runs = [anyio.run(session) for _ in range(repeat)]
    anyio.run(rt.aclose)
    bare_step = statistics.median(anyio.run(bare, steps) for _ in range(repeat))
    per = statistics.median(r[1] for r in runs)
    return {
        "per_step_us": (per - bare_step) * 1e6,
        "bare_step_us": bare_step * 1e6,
        "session_start_ms": statistics.median(r[0] for r in runs) * 1e3,
        "first_session_ms": first * 1e3,
        "runtime_build_ms": build_s * 1e3,
    }


def worker_start(config: str) -> dict[str, Any]:
    """``greenroom run`` of the config's script, in this (child) process; its peak memory."""
    from greenroom.cli.app import main

    code = 0
    try:
        main(["run", config, "go"])
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return {"exit": code, "peak_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# ------------------------------------------------------------------------------ parent
def child(
    src: Path | None, args: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
) -> dict[str, Any]:
    """Run this script as a worker with ``src``'s code first on the path (None: this checkout)."""
    env = dict(env or os.environ)
    if src is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(src / "core"), str(src / "plugins"), env.get("PYTHONPATH", "")])
    out = Path(tempfile.mkstemp(suffix=".json")[1])
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--worker", str(out), *args], env=env, cwd=cwd, capture_output=True, text=True
    )
    wall = time.perf_counter() - started
    try:
        result: dict[str, Any] = json.loads(out.read_text()) if done.returncode == 0 else {}
    except ValueError:
        result = {}
    out.unlink(missing_ok=True)
    if done.returncode != 0 or result.get("exit", 0) != 0:
        result["error"] = (done.stderr.strip().splitlines() or ["exit " + str(done.returncode)])[-1][:200]
    result["wall_ms"] = wall * 1e3
    return result


def measure(args: argparse.Namespace, folder: Path, sources: dict[str, Path | None]) -> dict[str, Any]:
    results: dict[str, Any] = {"steps": {}, "start": {}}
    for size in args.sizes:
        catalog = folder / f"catalog-{size}.jsonl"
        config = write_config(folder, size)
        for strategy in args.strategies:
            for label, src in sources.items():
                env = {**os.environ, "GREENROOM_HOME": str(folder / f"home-{label}-steps")}
                worker = ["steps", str(catalog), strategy, str(args.steps), str(args.repeat), args.priors_store]
                r = child(src, worker, env)
                results["steps"].setdefault(label, {}).setdefault(str(size), {})[strategy] = r
                print(
                    f"  {label:>8} {size:>7,} {strategy:<9} {r.get('per_step_us', float('nan')):>9.0f} µs/step"
                    f" {r.get('error', '')}",
                    file=sys.stderr,
                )
        # in turns, so a load that comes and goes on the machine hits every code alike
        runs: dict[str, list[dict[str, Any]]] = {label: [] for label in sources}
        for _ in range(1 + args.repeat):
            for label, src in sources.items():
                env = {**os.environ, "GREENROOM_HOME": str(folder / f"home-{label}-{size}")}
                runs[label].append(child(src, ["start", str(config)], env, folder))
        for label, done in runs.items():
            results["start"].setdefault(label, {})[str(size)] = r = {
                "cold_ms": done[0]["wall_ms"],
                "warm_ms": statistics.median(x["wall_ms"] for x in done[1:]),
                "peak_mb": max(x.get("peak_mb", 0.0) for x in done),
                "error": next((x["error"] for x in done if "error" in x), None),
            }
            print(f"  {label:>8} {size:>7,} greenroom run: {r}", file=sys.stderr)
    return results


def report(results: dict[str, Any], sizes: list[int], strategies: list[str], labels: list[str]) -> None:
    from rich.console import Console
    from rich.table import Table

    console = Console(width=max(Console().width, 120))
    steps = Table(title="per-step overhead, µs (runtime minus a bare loop's step); session start, ms")
    span = f"{_short(sizes[-1])}÷{_short(sizes[0])}"
    for col in (
        "code",
        "strategy",
        *(f"{_short(n)} step" for n in sizes),
        *(f"{_short(n)} start" for n in sizes),
        span,
    ):
        steps.add_column(col, justify="right")
    for label in labels:
        for strategy in strategies:
            rows = [results["steps"][label][str(n)][strategy] for n in sizes]
            per = [r.get("per_step_us") for r in rows]
            starts = [r.get("session_start_ms") for r in rows]
            ratio = per[-1] / per[0] if per[0] and per[-1] and per[0] > 0 else None
            steps.add_row(
                label,
                strategy,
                *(_num(v, "{:,.0f}") for v in per),
                *(_num(v, "{:,.1f}") for v in starts),
                _num(ratio, "{:.2f}x"),
            )
    console.print(steps)
    start = Table(title="greenroom run (one step) in a new process: wall ms, peak MB; ratios to the smallest")
    first = _short(sizes[0])
    for col in ("code", "tools", "cold ms", "warm ms", f"warm ÷ {first}", "peak MB", f"peak ÷ {first}"):
        start.add_column(col, justify="right")
    for label in labels:
        base = results["start"][label][str(sizes[0])]
        for n in sizes:
            r = results["start"][label][str(n)]
            start.add_row(
                label,
                f"{n:,}",
                f"{r['cold_ms']:,.0f}",
                f"{r['warm_ms']:,.0f}",
                f"{r['warm_ms'] / base['warm_ms']:.2f}x",
                f"{r['peak_mb']:,.0f}",
                f"{r['peak_mb'] / base['peak_mb']:.2f}x" + (" (error)" if r["error"] else ""),
            )
    console.print(start)
    if len(labels) > 1:
        before, after = labels[1], labels[0]
        ratios = Table(title=f"{after} ÷ {before}, measured in the same run")
        for col in ("what", *(f"{n:,}" for n in sizes)):
            ratios.add_column(col, justify="right")
        ratios.add_row(
            "new process, warm",
            *(
                _ratio(results["start"][after][str(n)]["warm_ms"], results["start"][before][str(n)]["warm_ms"])
                for n in sizes
            ),
        )
        ratios.add_row(
            "peak memory",
            *(
                _ratio(results["start"][after][str(n)]["peak_mb"], results["start"][before][str(n)]["peak_mb"])
                for n in sizes
            ),
        )
        for strategy in strategies:
            for key, what in (("per_step_us", "step"), ("session_start_ms", "session start")):
                cells = [
                    _ratio(
                        results["steps"][after][str(n)][strategy].get(key),
                        results["steps"][before][str(n)][strategy].get(key),
                    )
                    for n in sizes
                ]
                ratios.add_row(f"{strategy} {what}", *cells)
        console.print(ratios)


def _short(n: int) -> str:
    return f"{n // 1000}k" if n >= 1000 and n % 1000 == 0 else str(n)


def _num(value: float | None, fmt: str) -> str:
    return fmt.format(value) if value is not None else "failed"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a is not None and b else "n/a"


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--worker"]:
        out, kind, *rest = argv[1:]
        result = (
            worker_steps(rest[0], rest[1], int(rest[2]), int(rest[3]), *rest[4:])
            if kind == "steps"
            else worker_start(rest[0])
        )
        Path(out).write_text(json.dumps(result))
        return 0
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--steps", type=int, default=100)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--strategies", nargs="+", default=list(STRATEGIES), choices=STRATEGIES)
    ap.add_argument("--baseline", type=Path, help="another checkout's folder (with core/ and plugins/) to compare with")
    ap.add_argument("--json", type=Path, help="also write every figure here")
    ap.add_argument("--priors-store", default="", help="add priors-persistence with this store to the per-step arms")
    args = ap.parse_args(argv)
    sources: dict[str, Path | None] = {CURRENT: None}
    if args.baseline is not None:
        sources["baseline"] = args.baseline.resolve()
    with tempfile.TemporaryDirectory(prefix="greenroom-overhead-") as tmp:
        folder = Path(tmp)
        base = base_records()
        for size in args.sizes:
            build_catalog(folder / f"catalog-{size}.jsonl", size, base)
        results = measure(args, folder, sources)
    results.update(sizes=args.sizes, strategies=args.strategies, steps_per_session=args.steps, repeat=args.repeat)
    if args.json:
        args.json.write_text(json.dumps(results, indent=1))
    report(results, args.sizes, args.strategies, list(sources))
    return 0


if __name__ == "__main__":
    sys.exit(main())
