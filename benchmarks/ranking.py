"""Benchmark of the search-ranking plugin: quality and speed of every ranker on every dataset.

For each dataset in ``../shared/datasets/`` that has queries (seal_tools, metatool), each
ranker configuration answers every query in its full form (the user's request) and its
keywords-only form (first four content words), one query at a time after its index is
built. Reported: Recall@5, Recall@10, nDCG@10, MRR, all-gold@5, index build time, p50 and
p95 latency, and each quality metric relative to plain BM25 (bm25s over name and
description) measured in the same run.

    python benchmarks/ranking.py [--limit N] [--datasets seal_tools,metatool]

Datasets are read in place and never copied; when they are absent the benchmark says so
and exits 0. Results go to benchmarks/results/ranking.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from greenroom_ranking.config import RankingConfig
from greenroom_ranking.evaluate import EvalResult, evaluate, load_queries, load_tools, relative

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("GREENROOM_DATASETS", ROOT.parent / "shared" / "datasets"))
RESULTS = ROOT / "benchmarks" / "results" / "ranking.json"

CONFIGS: dict[str, tuple[str, RankingConfig | None]] = {
    # label: (ranker spec, base config)
    "bm25-plain": ("bm25-plain", None),
    "keyword": ("keyword", None),
    "bm25": ("bm25", None),
    "default (keyword 0.3 + bm25, weighted)": ("default", None),
    "keyword+bm25 rrf": ("keyword+bm25", RankingConfig(fusion="rrf", weights={"keyword": 1.0, "bm25": 1.0})),
    "bm25-plain+bm25 weighted": ("bm25-plain+bm25", RankingConfig(weights={"bm25-plain": 0.5, "bm25": 1.0})),
}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="evenly spaced sample of N queries per dataset")
    parser.add_argument("--datasets", default="", help="comma-separated dataset names (default: all with queries)")
    args = parser.parse_args()
    console = Console()
    if not DATASETS.is_dir():
        console.print(f"[yellow]datasets not found at {DATASETS}; nothing to measure[/]")
        return 0
    wanted = [d for d in args.datasets.split(",") if d]
    folders = [f for f in sorted(DATASETS.iterdir()) if (f / "queries.jsonl").exists() and (f / "tools.jsonl").exists()]
    folders = [f for f in folders if not wanted or f.name in wanted]
    skipped = [f.name for f in sorted(DATASETS.iterdir()) if f.is_dir() and f not in folders]
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    out: dict[str, Any] = {"machine": machine, "limit": args.limit, "skipped": skipped, "datasets": {}}
    for folder in folders:
        tools = load_tools(folder / "tools.jsonl")
        queries = load_queries(folder / "queries.jsonl", args.limit)
        results: list[EvalResult] = []
        start = time.perf_counter()
        for form in ("full", "keywords"):
            for label, (spec, base) in CONFIGS.items():
                r = evaluate(tools, queries, spec, form=form, config=base)
                r = EvalResult(**{**r.to_json(), "ranker": label})
                results.append(r)
        rel = relative(results, baseline="bm25-plain")
        table = Table(title=f"{folder.name}: {len(tools)} tools, {len(queries)} queries ({os.cpu_count()} CPUs)")
        for col in (
            "ranker",
            "form",
            "R@5",
            "R@10",
            "nDCG@10",
            "MRR",
            "all@5",
            "R@5 vs plain",
            "R@10 vs plain",
            "nDCG vs plain",
            "MRR vs plain",
            "build s",
            "p50 ms",
            "p95 ms",
        ):
            table.add_column(col, justify="left" if col in ("ranker", "form") else "right")
        for r in results:
            ratio = rel.get((r.ranker, r.form), {})
            table.add_row(
                r.ranker,
                r.form,
                f"{r.recall_at_5:.3f}",
                f"{r.recall_at_10:.3f}",
                f"{r.ndcg_at_10:.3f}",
                f"{r.mrr:.3f}",
                f"{r.all_gold_at_5:.3f}",
                *(f"{ratio.get(m, float('nan')):.3f}x" for m in ("recall_at_5", "recall_at_10", "ndcg_at_10", "mrr")),
                f"{r.build_seconds:.3f}",
                f"{r.p50_ms:.2f}",
                f"{r.p95_ms:.2f}",
            )
        console.print(table)
        console.print(f"[dim]{folder.name}: {time.perf_counter() - start:.1f}s[/]")
        out["datasets"][folder.name] = {
            "tools": len(tools),
            "queries": len(queries),
            "results": [{**r.to_json(), "vs_baseline": rel.get((r.ranker, r.form))} for r in results],
        }
    if skipped:
        console.print(f"[dim]no queries, skipped: {', '.join(skipped)}[/]")
    avg = {}
    for label in CONFIGS:
        ratios = [
            row["vs_baseline"]["recall_at_5"]
            for ds in out["datasets"].values()
            for row in ds["results"]
            if row["ranker"] == label and row["vs_baseline"]
        ]
        if ratios:
            avg[label] = sum(ratios) / len(ratios)
    out["mean_recall_at_5_ratio"] = avg
    for label, value in avg.items():
        console.print(f"mean Recall@5 vs bm25-plain over datasets and forms: {label}: {value:.3f}x")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(json.dumps(out, indent=1, sort_keys=True))
    console.print(f"[dim]wrote {RESULTS.relative_to(ROOT)}[/]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
