"""What learning is worth in tasks: ``greenroom eval`` with the simulated agent on the real
catalogs, with and without priors learned as the sessions go.

For seal_tools and metatool (their tools and queries, read in place from
``../shared/datasets``), every arm runs the same 200 sessions drawn from a pool of 40
tasks with Zipf-like repetition (s = 1.1, seed 7):

- ``all-eager``: every schema in every request (the baseline of cost ratios);
- ``dispatch``: deferred tools, ToolSearch and the dispatcher, no priors;
- ``dispatch+priors``: the same, with priors learned from the sessions before.

Printed per dataset: task success, searches, steps and input tokens per session, session
cost (Anthropic prices with prompt caching), and the ratios of dispatch+priors to
dispatch, all from one run. Then the search boost alone: Recall@5 of ToolSearch's
ranking on 300 held-out queries (tasks outside the learning pool) with the priors the
learning arm ended with, against the same ranking with no priors.

    python benchmarks/eval_priors.py [--sessions 200] [--datasets seal_tools,metatool]
        [--no-eager] [--plot docs/img/eval-priors.png] [--figures]

Results go to benchmarks/results/eval_priors.json; ``--figures`` also writes what
docs/priors.md and README show of them to docs/figures/eval_priors.json and rewrites
those tables (``benchmarks/figures.py``). Datasets absent: says so, exits 0.
"""

from __future__ import annotations

import argparse
import json
import random
import tempfile
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from greenroom import RunKind, SearchQuery, abuild_runtime
from greenroom_lab.eval.arms import parse_arms
from greenroom_lab.eval.plan import Target, evaluate
from greenroom_lab.eval.report import plot_curves, print_report
from greenroom_lab.eval.tasks import Mix, Task, load_tasks

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
RESULTS = Path(__file__).resolve().parent / "results" / "eval_priors.json"
HELD_OUT = 300


def held_out(tasks: list[Task], mix: Mix) -> list[Task]:
    """Tasks outside the learning pool (``session_stream`` draws the pool first)."""
    rng = random.Random(mix.seed)
    pool = {t.id for t in rng.sample(tasks, min(mix.pool, len(tasks)))}
    rest = [t for t in tasks if t.id not in pool]
    return random.Random(mix.seed + 1).sample(rest, min(HELD_OUT, len(rest)))


async def recall_at_5(config: Path, queries: list[Task]) -> float:
    """Mean share of gold tools in ToolSearch's top 5, ranked with the config's priors."""
    rt = await abuild_runtime(config)
    try:
        candidates = rt.universe()
        total = 0.0
        for task in queries:
            run = rt.start_run(kind=RunKind.PREVIEW)
            await run.start()
            hits, _ = await run.ctx.search(SearchQuery.parse(task.query, max_results=5), candidates)
            await run.end(run.outcome_of("preview"))
            names = {h.name for h in hits}
            total += len(names & set(task.gold)) / len(task.gold)
        return total / len(queries)
    finally:
        await rt.aclose()


def measure(name: str, args: argparse.Namespace, console: Console) -> dict[str, Any] | None:
    folder = DATASETS / name
    if not (folder / "queries.jsonl").exists():
        console.print(f"[yellow]{name}: not found under {DATASETS}, skipped[/]")
        return None
    arm_names = "dispatch,dispatch+priors" if args.no_eager else "all-eager,dispatch,dispatch+priors"
    arms = parse_arms(arm_names)
    mix = Mix(sessions=args.sessions, pool=40, zipf=1.1, seed=7)
    out = Path(tempfile.mkdtemp(prefix=f"eval-{name}-"))
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as bar:
        ids = {a.name: bar.add_task(f"{name} {a.name}", total=mix.sessions) for a in arms}
        report = evaluate(
            Target(tools=folder / "tools.jsonl"),
            folder / "queries.jsonl",
            arms,
            mix,
            out,
            progress=lambda arm, _r: bar.advance(ids[arm]),
        )
    queries = held_out(load_tasks(folder / "queries.jsonl"), mix)
    boost = {
        "without": anyio.run(recall_at_5, out / "dispatch.toml", queries),
        "with": anyio.run(recall_at_5, out / "dispatch-priors.toml", queries),
    }
    report["search_boost"] = {"queries": len(queries), "recall_at_5": boost}
    if args.plot:
        plot_curves(report, args.plot.with_name(f"{args.plot.stem}-{name}{args.plot.suffix}"), f"{name}: learning")
    return report


def print_dataset(console: Console, name: str, report: dict[str, Any]) -> dict[str, float]:
    arms = {a["name"]: a for a in report["arms"]}
    print_report(console, report, f"{name}: {arms['dispatch']['sessions']} sessions, simulated agent")
    plain, learned = arms["dispatch"], arms["dispatch+priors"]
    boost = report["search_boost"]["recall_at_5"]
    ratios = {
        "searches": learned["searches_per_session"] / plain["searches_per_session"],
        "input_tokens": learned["input_tokens_per_session"] / plain["input_tokens_per_session"],
        "cost": learned["cost_per_session"] / plain["cost_per_session"],
        "success_points": 100 * (learned["success"] - plain["success"]),
        "recall_at_5_with": boost["with"],
        "recall_at_5_without": boost["without"],
    }
    console.print(
        f"priors / no priors: searches {ratios['searches']:.2f}x, input tokens "
        f"{ratios['input_tokens']:.2f}x, cost {ratios['cost']:.2f}x, success "
        f"{ratios['success_points']:+.1f} points; held-out Recall@5 {boost['with']:.3f} with "
        f"priors vs {boost['without']:.3f} without ({report['search_boost']['queries']} queries)",
        highlight=False,
    )
    return ratios


ARM_FIGURES = (
    "name",
    "success",
    "searches_per_session",
    "steps_per_session",
    "input_tokens_per_session",
    "cost_ratio",
    "prefix_changes",
    "errors",
)


def figures(results: dict[str, Any]) -> dict[str, Any]:
    """What the docs show of the results: per dataset its arms' figures and the ratios
    (rounded to six places, so that a figure reads the same on every machine)."""

    def rounded(value: Any) -> Any:
        return round(value, 6) if isinstance(value, float) else value

    datasets = []
    for name, report in results.items():
        lines = (DATASETS / name / "tools.jsonl").read_text(encoding="utf-8").splitlines()
        datasets.append(
            {
                "name": name,
                "tools": sum(1 for line in lines if line.strip()),
                "arms": [{k: rounded(a[k]) for k in ARM_FIGURES} for a in report["arms"]],
                "ratios": {k: rounded(v) for k, v in report["ratios"].items()},
                "held_out": report["search_boost"]["queries"],
            }
        )
    mix = next(iter(results.values()))["settings"]["mix"]
    settings = {k: mix[k] for k in ("sessions", "pool", "zipf", "seed")}
    return {"settings": settings, "datasets": datasets}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--datasets", default="seal_tools,metatool")
    parser.add_argument("--no-eager", action="store_true", help="skip the all-eager arm (the slowest)")
    parser.add_argument("--plot", type=Path, default=None)
    parser.add_argument("--figures", action="store_true", help="write docs/figures/eval_priors.json and the tables")
    args = parser.parse_args()
    console = Console()
    results: dict[str, Any] = {}
    for name in args.datasets.split(","):
        report = measure(name.strip(), args, console)
        if report is not None:
            report["ratios"] = print_dataset(console, name, report)
            results[name] = report
    if results:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
        console.print(f"written {RESULTS}")
    if results and args.figures:
        import figures as docs_figures  # beside this script

        console.print(f"written {docs_figures.save('eval_priors', figures(results))}")
        docs_figures.main([])


if __name__ == "__main__":
    main()
