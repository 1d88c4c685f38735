"""What learning is worth in tasks: ``greenroom eval`` with the simulated agent on the real
catalogs, with and without priors learned as the sessions go, over several seeds.

For seal_tools and metatool (their tools and queries, read in place from
``../shared/datasets``), every arm runs the same sessions: 200 of 3 requests each, a
stream of tools drawn Zipf-like (s = 1.1) from a pool of 40, each request worded by a
task of the dataset that needs its tool (a fresh wording while the dataset has one:
metatool has dozens per tool, seal_tools two or three; github_mcp has no queries), for
each of 5 seeds from 7 (about 6 minutes on two shared cores):

- ``all-eager``: every schema in every request (the baseline of cost ratios), held to
  the 200,000-token context window of the model the prices are for;
- ``dispatch``: deferred tools, ToolSearch and the dispatcher, no priors;
- ``dispatch+priors``: the same, with priors learned from the sessions before.

Printed per dataset: the report of ``greenroom eval`` (each figure the mean over seeds,
± their standard deviation; cost with prompt caching and without), then dispatch+priors
over dispatch seed by seed, mean ± standard deviation. Then the search boost alone:
Recall@5 of ToolSearch's ranking on 300 held-out queries (tasks no request of the seed
used) with the priors the learning arm ended with, against the same ranking with none.

    python benchmarks/eval_priors.py [--sessions 200] [--seeds 5] [--requests 3]
        [--stream tools] [--datasets seal_tools,metatool] [--no-eager]
        [--plot docs/img/eval-priors.png] [--figures]

Results go to benchmarks/results/eval_priors.json; ``--figures`` also writes what
docs/priors.md and README show of them to docs/figures/eval_priors.json and rewrites
those tables (``benchmarks/figures.py``). Datasets absent: says so, exits 0.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from greenroom import RunKind, SearchQuery, abuild_runtime
from greenroom_lab.eval.arms import parse_arms
from greenroom_lab.eval.plan import Plan, Target, prepare
from greenroom_lab.eval.report import plot_curves, print_report
from greenroom_lab.eval.tasks import STREAMS, Mix, Task, load_tasks

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
RESULTS = Path(__file__).resolve().parent / "results" / "eval_priors.json"
HELD_OUT = 300


def held_out(tasks: Sequence[Task], plan: Plan, seed: int) -> list[Task]:
    """Tasks no request of the seed's stream used, ``HELD_OUT`` of them."""
    used = {t.id for session in plan.streams[seed].sessions for t in session}
    rest = [t for t in tasks if t.id not in used]
    return random.Random(seed + 1).sample(rest, min(HELD_OUT, len(rest)))


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


def spread(values: Sequence[float]) -> dict[str, float]:
    """Mean and standard deviation (0 with one value) of a figure over seeds."""
    return {"mean": statistics.fmean(values), "sd": statistics.stdev(values) if len(values) > 1 else 0.0}


def measure(name: str, args: argparse.Namespace, console: Console) -> dict[str, Any] | None:
    folder = DATASETS / name
    if not (folder / "queries.jsonl").exists():
        console.print(f"[yellow]{name}: not found under {DATASETS}, skipped[/]")
        return None
    arm_names = "dispatch,dispatch+priors" if args.no_eager else "all-eager,dispatch,dispatch+priors"
    arms = parse_arms(arm_names)
    mix = Mix(args.sessions, 40, 1.1, 7, args.stream, args.requests, args.seeds)
    out = Path(tempfile.mkdtemp(prefix=f"eval-{name}-"))
    plan = prepare(Target(tools=folder / "tools.jsonl"), folder / "queries.jsonl", arms, mix, out)
    for warning in plan.warnings:
        console.print(f"[yellow]warning:[/] {warning}", highlight=False)
    with Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    ) as bar:
        ids = {a.name: bar.add_task(f"{name} {a.name}", total=mix.sessions * mix.seeds) for a in arms}
        report = plan.run(progress=lambda arm, _r: bar.advance(ids[arm]))
    tasks = load_tasks(folder / "queries.jsonl")
    boosts = []
    for seed in mix.seed_list:
        queries = held_out(tasks, plan, seed)
        configs = plan.configs[seed]
        boosts.append(
            (
                anyio.run(recall_at_5, configs["dispatch+priors"], queries),
                anyio.run(recall_at_5, configs["dispatch"], queries),
            )
        )
    report["search_boost"] = {
        "queries": HELD_OUT,
        "recall_at_5": {"with": spread([w for w, _ in boosts]), "without": spread([o for _, o in boosts])},
    }
    if args.plot:
        plot_curves(report, args.plot.with_name(f"{args.plot.stem}-{name}{args.plot.suffix}"), f"{name}: learning")
    return report


RATIOS = {
    "searches": "searches_per_session",
    "input_tokens": "input_tokens_per_session",
    "cost": "cost_per_session",
    "cost_no_cache": "cost_no_cache_per_session",
}


def print_dataset(console: Console, name: str, report: dict[str, Any]) -> dict[str, Any]:
    arms = {a["name"]: a for a in report["arms"]}
    seeds = len(report["seeds"])
    print_report(console, report, f"{name}: {report['settings']['mix']['sessions']} sessions, {seeds} seeds")
    plain, learned = arms["dispatch"]["per_seed"], arms["dispatch+priors"]["per_seed"]
    ratios = {
        key: spread([b[figure] / a[figure] for a, b in zip(plain, learned, strict=True)])
        for key, figure in RATIOS.items()
    }
    ratios["success_points"] = spread(
        [100 * (b["success"] - a["success"]) for a, b in zip(plain, learned, strict=True)]
    )
    boost = report["search_boost"]["recall_at_5"]

    def pm(key: str, digits: int = 2) -> str:
        return f"{ratios[key]['mean']:.{digits}f}x ± {ratios[key]['sd']:.{digits}f}"

    points = ratios["success_points"]
    console.print(
        f"priors / no priors: searches {pm('searches')}, input tokens {pm('input_tokens')}, cost {pm('cost')} "
        f"({pm('cost_no_cache')} without the cache), success {points['mean']:+.1f} ± {points['sd']:.1f} points; "
        f"held-out Recall@5 {boost['with']['mean']:.3f} with priors vs {boost['without']['mean']:.3f} without "
        f"({report['search_boost']['queries']} queries a seed)",
        highlight=False,
    )
    return ratios


ARM_FIGURES = (
    "name",
    "sessions",
    "success",
    "searches_per_session",
    "steps_per_session",
    "input_tokens_per_session",
    "cost_per_session",
    "cost_no_cache_per_session",
    "cost_ratio",
    "prefix_changes",
    "errors",
    "over_window",
    "largest_refused",
    "context_window",
)


def rounded(value: Any) -> Any:
    """Six places, so that a figure reads the same on every machine."""
    if isinstance(value, float):
        return round(value, 6)
    if isinstance(value, dict):
        return {k: rounded(v) for k, v in value.items()}
    return value


def figures(results: dict[str, Any]) -> dict[str, Any]:
    """What the docs show of the results: per dataset its stream, its arms' figures with
    their spread over seeds, and the ratios of priors to none."""
    datasets = []
    for name, report in results.items():
        lines = (DATASETS / name / "tools.jsonl").read_text(encoding="utf-8").splitlines()
        streams = list(report["stream"].values())
        datasets.append(
            {
                "name": name,
                "tools": sum(1 for line in lines if line.strip()),
                "stream": {k: sum(s[k] for s in streams) for k in ("requests", "wordings", "repeated")},
                "arms": [
                    {**{k: rounded(a[k]) for k in ARM_FIGURES}, "spread": rounded(a["spread"])} for a in report["arms"]
                ],
                "ratios": rounded(report["ratios"]),
                "recall_at_5": rounded(report["search_boost"]["recall_at_5"]),
                "held_out": report["search_boost"]["queries"],
            }
        )
    mix = next(iter(results.values()))["settings"]["mix"]
    settings = {k: mix[k] for k in ("sessions", "requests", "stream", "pool", "zipf", "seed", "seeds")}
    return {"settings": settings, "datasets": datasets}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=200)
    parser.add_argument("--seeds", type=int, default=5, help="streams from seed 7 on (± over them)")
    parser.add_argument("--requests", type=int, default=3, help="requests a session")
    parser.add_argument("--stream", choices=STREAMS, default="tools")
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
