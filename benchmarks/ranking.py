"""Benchmark of the search-ranking plugin: quality and speed of every ranker on every dataset.

For each dataset in ``../shared/datasets/`` that has queries (seal_tools, metatool), each
ranker configuration answers every query in its full form (the user's request) and its
keywords-only form (first four content words), one query at a time after its index is
built. Reported: Recall@5, Recall@10, nDCG@10, MRR, all-gold@5, index build time, p50 and
p95 latency, and each quality metric relative to plain BM25 (bm25s over name and
description) measured in the same run.

With the ``embeddings`` extra installed, the embedding ranker and its hybrids are measured
too, and for every dataset (github_mcp included, which has no queries) the one-time cost
of embedding the catalog: model load and a cold build into an empty cache directory. The
ranked runs then read the catalog's matrix from that cache, as a restarted process would,
and their latency is the per-query cost (one query embedding plus a matrix product).

    python benchmarks/ranking.py [--limit N] [--datasets seal_tools,metatool] [--no-embeddings]

Datasets are read in place and never copied; when they are absent the benchmark says so
and exits 0. Results go to benchmarks/results/ranking.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from greenroom_ranking.config import HYBRID_SETTINGS, RankingConfig
from greenroom_ranking.evaluate import EvalResult, evaluate, load_queries, load_tools, relative
from greenroom_ranking.extra import missing_extra

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

# Built only when the embeddings extra is installed: RankingConfig refuses the ranker otherwise.
EMBEDDING_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "embedding": ("embedding", {}),
    "hybrid: kw 0.3+bm25+emb 0.5": ("hybrid", {}),
    "kw 0.3+bm25+emb 1.0": (
        "keyword+bm25+embedding",
        {"weights": {"keyword": 0.3, "bm25": 1.0, "embedding": 1.0}, "embedding_min_similarity": 0.2},
    ),
    "kw 0.3+bm25+emb rrf": (
        "keyword+bm25+embedding",
        {"fusion": "rrf", "weights": {"keyword": 0.3, "bm25": 1.0, "embedding": 1.0}},
    ),
}


def embedding_configs() -> dict[str, tuple[str, RankingConfig | None]]:
    return {label: (spec, RankingConfig(**extra)) for label, (spec, extra) in EMBEDDING_CONFIGS.items()}


def cold_embedding_build(tools: list[Any], cache_dir: Path) -> dict[str, float]:
    """Seconds to load the model and to embed the whole catalog with nothing cached."""
    from greenroom_ranking import embeddings

    start = time.perf_counter()
    embeddings._load_model(None)
    load = time.perf_counter() - start
    emb = embeddings.Embedder(None, cache_dir=cache_dir)
    texts = [embeddings.embedding_text(t, parameters=HYBRID_SETTINGS.get("embedding_parameters", False)) for t in tools]
    start = time.perf_counter()
    matrix = emb.catalog(texts)
    cold = time.perf_counter() - start
    start = time.perf_counter()
    emb.catalog(texts)
    warm = time.perf_counter() - start
    # seed greenroom's own cache (same key) so the ranked runs start warm, like a restart
    shared = embeddings.embedder(None)
    embeddings._write_matrix(shared.cache_path(texts), matrix)
    return {"model_load_s": load, "cold_build_s": cold, "cached_build_s": warm, "tools": len(tools)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="evenly spaced sample of N queries per dataset")
    parser.add_argument("--datasets", default="", help="comma-separated dataset names (default: all with queries)")
    parser.add_argument("--no-embeddings", action="store_true", help="skip the embedding ranker and its hybrids")
    args = parser.parse_args()
    console = Console()
    if not DATASETS.is_dir():
        console.print(f"[yellow]datasets not found at {DATASETS}; nothing to measure[/]")
        return 0
    configs = dict(CONFIGS)
    problem = None if args.no_embeddings else missing_extra()
    use_embeddings = not args.no_embeddings and problem is None
    if problem:
        console.print(f"[yellow]embedding ranker not measured: {problem}[/]")
    if use_embeddings:
        configs.update(embedding_configs())
    wanted = [d for d in args.datasets.split(",") if d]
    every = [f for f in sorted(DATASETS.iterdir()) if (f / "tools.jsonl").exists()]
    every = [f for f in every if not wanted or f.name in wanted]
    folders = [f for f in every if (f / "queries.jsonl").exists()]
    skipped = [f.name for f in sorted(DATASETS.iterdir()) if f.is_dir() and f not in folders]
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    out: dict[str, Any] = {"machine": machine, "limit": args.limit, "skipped": skipped, "datasets": {}}
    if use_embeddings:
        out["embedding_build"] = measure_builds(console, every)
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
    )
    for folder in folders:
        tools = load_tools(folder / "tools.jsonl")
        queries = load_queries(folder / "queries.jsonl", args.limit)
        results: list[EvalResult] = []
        start = time.perf_counter()
        with progress:
            task = progress.add_task(folder.name, total=2 * len(configs) * len(queries))
            for form in ("full", "keywords"):
                for label, (spec, base) in configs.items():
                    progress.update(task, description=f"{folder.name}: {label} ({form})")

                    def advance(n: int, task: Any = task) -> None:
                        progress.advance(task, n)

                    r = evaluate(tools, queries, spec, form=form, config=base, progress=advance)
                    results.append(EvalResult(**{**r.to_json(), "ranker": label}))
            progress.remove_task(task)
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
    for label in configs:
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


def measure_builds(console: Console, folders: list[Path]) -> dict[str, dict[str, float]]:
    """The one-time embedding cost per catalog, into a throwaway cache directory so an
    earlier run's cache cannot make it look free."""
    builds: dict[str, dict[str, float]] = {}
    table = Table(title="embedding index build (all-MiniLM-L6-v2, CPU)")
    for col in ("dataset", "tools", "model load s", "cold build s", "cached build s"):
        table.add_column(col, justify="left" if col == "dataset" else "right")
    with tempfile.TemporaryDirectory(prefix="greenroom-bench-") as tmp:
        for folder in folders:
            with console.status(f"embedding {folder.name} catalog"):
                b = cold_embedding_build(load_tools(folder / "tools.jsonl"), Path(tmp))
            builds[folder.name] = b
            table.add_row(
                folder.name,
                str(int(b["tools"])),
                f"{b['model_load_s']:.2f}",
                f"{b['cold_build_s']:.2f}",
                f"{b['cached_build_s']:.3f}",
            )
    console.print(table)
    return builds


if __name__ == "__main__":
    raise SystemExit(main())
