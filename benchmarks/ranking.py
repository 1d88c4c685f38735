"""Benchmark of the search-ranking plugin: quality and speed of every ranker on every dataset.

For each dataset in ``../shared/datasets/`` that has queries (seal_tools, metatool), each
ranker configuration answers every query in its full form (the user's request) and its
keywords-only form (first four content words), one query at a time after its index is
built. The same queries are also asked of the combined catalog (every dataset's tools,
4,392, with their groups), where a tool competes with the other datasets' tools.
Reported: Recall@5, Recall@10, nDCG@10, MRR, all-gold@5, index build time, p50 and p95
latency, each quality metric relative to plain BM25 (bm25s over name and description),
and Recall@5 relative to ``default-v1`` (ranking before fielded documents and query
splitting), all measured in the same run. Every preset runs before (``-v1``) and after,
so before/after always come from one run. Recall@5 is also given on the even and the odd
query positions apart: knobs were chosen on the even ones.

With the ``embeddings`` extra installed, the embedding ranker and its hybrids are measured
too, and for every dataset (github_mcp included, which has no queries) the one-time cost
of embedding the catalog: model load and a cold build into an empty cache directory. The
ranked runs then read the catalog's matrix from that cache, as a restarted process would,
and their latency is the per-query cost (one query embedding plus a matrix product).

    python benchmarks/ranking.py [--limit N] [--datasets seal_tools,metatool] [--no-embeddings] [--no-combined]
        [--presets default-v1,hybrid-v1,hybrid]

``--presets`` measures only the named configurations (``default-v1`` is always among them:
every ratio is against it). Datasets are read in place and never copied; when they are
absent the benchmark says so and exits 0. Results go to benchmarks/results/ranking.json
(``GREENROOM_RANKING_RESULTS`` names another file).
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
from greenroom_ranking.evaluate import (
    EvalQuery,
    EvalResult,
    evaluate,
    load_queries,
    load_tools,
    recall_at,
    relative,
)
from greenroom_ranking.extra import missing_extra

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("GREENROOM_DATASETS", ROOT.parent / "shared" / "datasets"))
RESULTS = Path(os.environ.get("GREENROOM_RANKING_RESULTS", ROOT / "benchmarks" / "results" / "ranking.json"))

CONFIGS: dict[str, tuple[str, RankingConfig | None]] = {
    # label: (ranker spec, base config); each preset before (-v1) and after
    "bm25-plain": ("bm25-plain", None),
    "keyword-v1": ("keyword-v1", None),
    "keyword": ("keyword", None),
    "bm25-v1": ("bm25-v1", None),
    "bm25": ("bm25", None),
    "default-v1": ("default-v1", None),
    "default": ("default", None),
    "default+routing 0.3": ("keyword+bm25+routing", RankingConfig(weights={"routing": 0.3})),
}

# Built only when the embeddings extra is installed: RankingConfig refuses the ranker otherwise.
EMBEDDING_CONFIGS: dict[str, tuple[str, dict[str, Any]]] = {
    "embedding-v1": ("embedding-v1", {}),
    "embedding": ("embedding", {}),
    "hybrid-v1": ("hybrid-v1", {}),
    "hybrid": ("hybrid", {}),
}

BEFORE = "default-v1"
"""What every Recall@5 ratio of the summary is against: today's default before this work."""


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


def combined_catalog(folders: list[Path]) -> list[Any]:
    """Every dataset's tools in one catalog (each name once, the first kept), with their groups."""
    seen: dict[str, Any] = {}
    for folder in folders:
        for tool in load_tools(folder / "tools.jsonl"):
            seen.setdefault(tool.name, tool)
    return list(seen.values())


def run_catalog(
    name: str, tools: list[Any], queries: list[EvalQuery], configs: dict[str, tuple[str, RankingConfig | None]]
) -> tuple[list[EvalResult], dict[tuple[str, str], dict[str, float]]]:
    """Every config on every query form; Recall@5 on even and odd query positions apart."""
    results: list[EvalResult] = []
    halves: dict[tuple[str, str], dict[str, float]] = {}
    position = {id(q): i for i, q in enumerate(queries)}
    progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn())
    with progress:
        task = progress.add_task(name, total=2 * len(configs) * len(queries))
        for form in ("full", "keywords"):
            for label, (spec, base) in configs.items():
                progress.update(task, description=f"{name}: {label} ({form})")
                sums = {"even": [0.0, 0], "odd": [0.0, 0]}

                def record(q: EvalQuery, ranked: list[str], sums: dict[str, list[float]] = sums) -> None:
                    half = sums["even" if position[id(q)] % 2 == 0 else "odd"]
                    half[0] += recall_at(ranked, q.gold, 5)
                    half[1] += 1

                def advance(n: int, task: Any = task) -> None:
                    progress.advance(task, n)

                r = evaluate(tools, queries, spec, form=form, config=base, progress=advance, record=record)
                results.append(EvalResult(**{**r.to_json(), "ranker": label}))
                halves[(label, form)] = {h: v[0] / max(1, v[1]) for h, v in sums.items()}
        progress.remove_task(task)
    return results, halves


def _ratio(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}x"


def print_table(console: Console, title: str, results: list[EvalResult], halves: dict[Any, dict[str, float]]) -> None:
    plain = relative(results, baseline="bm25-plain")
    before = relative(results, baseline=BEFORE)
    table = Table(title=title)
    columns = ("ranker", "form", "R@5", "R@10", "nDCG@10", "MRR", "all@5", "R@5 vs plain", f"R@5 vs {BEFORE}")
    for col in (*columns, "R@5 even", "R@5 odd", "build s", "p50 ms", "p95 ms"):
        table.add_column(col, justify="left" if col in ("ranker", "form") else "right")
    for r in results:
        key = (r.ranker, r.form)
        table.add_row(
            r.ranker,
            r.form,
            *(f"{getattr(r, m):.3f}" for m in ("recall_at_5", "recall_at_10", "ndcg_at_10", "mrr", "all_gold_at_5")),
            _ratio(plain.get(key, {}).get("recall_at_5")),
            _ratio(before.get(key, {}).get("recall_at_5")),
            f"{halves[key]['even']:.3f}",
            f"{halves[key]['odd']:.3f}",
            f"{r.build_seconds:.3f}",
            f"{r.p50_ms:.2f}",
            f"{r.p95_ms:.2f}",
        )
    console.print(table)


def summary(datasets: dict[str, Any], labels: list[str]) -> dict[str, Any]:
    """Per label and group of catalogs (the datasets alone, the combined catalog): the mean
    and the least of the per dataset/form Recall@5 ratios against ``BEFORE``, on all
    queries and on each half."""
    out: dict[str, Any] = {}
    for group, catalogs in (
        ("datasets", [n for n in datasets if not n.startswith("combined/")]),
        ("combined", [n for n in datasets if n.startswith("combined/")]),
    ):
        for label in labels:
            ratios: dict[str, list[float]] = {"all": [], "even": [], "odd": []}
            for name in catalogs:
                rows = {(r["ranker"], r["form"]): r for r in datasets[name]["results"]}
                for form in ("full", "keywords"):
                    mine, base = rows.get((label, form)), rows.get((BEFORE, form))
                    if mine is None or base is None or not base["recall_at_5"]:
                        continue
                    ratios["all"].append(mine["recall_at_5"] / base["recall_at_5"])
                    for h in ("even", "odd"):
                        ratios[h].append(mine["halves"][h] / base["halves"][h] if base["halves"][h] else float("nan"))
            if ratios["all"]:
                out.setdefault(group, {})[label] = {
                    **{f"mean_{h}": sum(v) / len(v) for h, v in ratios.items()},
                    "least_all": min(ratios["all"]),
                }
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=None, help="evenly spaced sample of N queries per dataset")
    parser.add_argument("--datasets", default="", help="comma-separated dataset names (default: all with queries)")
    parser.add_argument("--no-embeddings", action="store_true", help="skip the embedding ranker and its hybrids")
    parser.add_argument("--no-combined", action="store_true", help="skip the combined catalog of every dataset")
    parser.add_argument("--presets", default="", help=f"comma-separated labels to measure ({BEFORE} always is)")
    args = parser.parse_args()
    console = Console(width=200)  # wide tables stay whole in a log file too
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
    if args.presets:
        chosen = {BEFORE, *(p.strip() for p in args.presets.split(",") if p.strip())}
        unknown = chosen - set(configs)
        if unknown:
            parser.error(f"--presets: unknown {', '.join(sorted(unknown))}; known: {', '.join(configs)}")
        configs = {label: spec for label, spec in configs.items() if label in chosen}
    wanted = [d for d in args.datasets.split(",") if d]
    every = [f for f in sorted(DATASETS.iterdir()) if (f / "tools.jsonl").exists()]
    every = [f for f in every if not wanted or f.name in wanted]
    folders = [f for f in every if (f / "queries.jsonl").exists()]
    skipped = [f.name for f in sorted(DATASETS.iterdir()) if f.is_dir() and f not in folders]
    machine = {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}
    out: dict[str, Any] = {
        "machine": machine,
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "limit": args.limit,
        "skipped": skipped,
        "datasets": {},
    }
    catalogs = [(f.name, load_tools(f / "tools.jsonl"), load_queries(f / "queries.jsonl", args.limit)) for f in folders]
    if not args.no_combined and len(every) > 1:
        combined = combined_catalog(every)
        catalogs += [(f"combined/{name}", combined, queries) for name, _tools, queries in list(catalogs)]
    if use_embeddings:
        out["embedding_build"] = measure_builds(console, every)
    for name, tools, queries in catalogs:
        start = time.perf_counter()
        results, halves = run_catalog(name, tools, queries, configs)
        title = f"{name}: {len(tools)} tools, {len(queries)} queries ({os.cpu_count()} CPUs)"
        print_table(console, title, results, halves)
        console.print(f"[dim]{name}: {time.perf_counter() - start:.1f}s[/]")
        plain = relative(results, baseline="bm25-plain")
        out["datasets"][name] = {
            "tools": len(tools),
            "queries": len(queries),
            "results": [
                {
                    **r.to_json(),
                    "vs_baseline": plain.get((r.ranker, r.form)),
                    "halves": halves[(r.ranker, r.form)],
                }
                for r in results
            ],
        }
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(out, indent=1, sort_keys=True))  # kept as it goes: a long run
    if skipped:
        console.print(f"[dim]no queries, skipped: {', '.join(skipped)}[/]")
    out["summary"] = summary(out["datasets"], list(configs))
    for group, labels in out["summary"].items():
        for label, v in labels.items():
            console.print(
                f"{group}: {label}: Recall@5 vs {BEFORE}, mean of dataset/form ratios {v['mean_all']:.3f}x "
                f"(even {v['mean_even']:.3f}x, odd {v['mean_odd']:.3f}x), least {v['least_all']:.3f}x"
            )
    RESULTS.write_text(json.dumps(out, indent=1, sort_keys=True))
    console.print(f"[dim]wrote {RESULTS}[/]")
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
