"""What the cross-encoder rerank stage costs a search, against the default search alone.

The model is a checkpoint of cross-encoder/ms-marco-MiniLM-L6-v2's shape (384 wide, six
layers, 12 heads) with seeded random weights: no trained cross-encoder can be fetched
here, and a forward pass costs the same whatever the weights. So this measures latency
only, never ranking quality. For each query (an evenly spaced sample of metatool's and
seal_tools', in full and in keywords form) the default search is timed, then the rerank
of its best ``depth`` results for each depth, one BLAS thread, interleaved, so both meet
the machine alike. Also timed: loading the model in this process.

    python benchmarks/rerank.py [--queries 100] [--depths 10,20,50] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"
sys.path.insert(0, str(ROOT / "tests"))

from support.rerank_testutil import MS_MARCO_MINILM_L6, write_model  # noqa: E402


def percentile(values: list[float], q: float) -> float:
    return float(np.percentile(values, q)) * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=100, help="queries per dataset and form")
    parser.add_argument("--depths", default="10,20,50", help="comma-separated rerank depths")
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    args = parser.parse_args()
    if not DATASETS.is_dir():
        print(f"no datasets at {DATASETS}: nothing to measure", file=sys.stderr)
        return
    depths = [int(d) for d in args.depths.split(",")]

    from greenroom import SearchQuery
    from greenroom_ranking import RankingConfig, RankingEngine
    from greenroom_ranking.embeddings import embedding_text
    from greenroom_ranking.evaluate import load_queries, load_tools, query_text
    from greenroom_ranking.rerank import Reranker

    with tempfile.TemporaryDirectory() as tmp:
        folder = write_model(Path(tmp) / "model", shape=MS_MARCO_MINILM_L6)
        started = time.perf_counter()
        reranker = Reranker(folder)
        reranker.scores("warm up", ["the first call"])
        load_s = time.perf_counter() - started

        search_t: list[float] = []
        rerank_t: dict[int, list[float]] = {d: [] for d in depths}
        for name in ("metatool", "seal_tools"):
            print(f"{name} ...", file=sys.stderr)
            tools = load_tools(DATASETS / name / "tools.jsonl")
            texts = {t.name: embedding_text(t) for t in tools}
            engine = RankingEngine(RankingConfig())
            engine.search(SearchQuery.parse("warm up the index", max_results=5), tools)
            for q in load_queries(DATASETS / name / "queries.jsonl", limit=args.queries):
                for form in ("full", "keywords"):
                    text = query_text(q, form)
                    begun = time.perf_counter()
                    found = engine.search(SearchQuery.parse(text, max_results=max(depths)), tools)
                    search_t.append(time.perf_counter() - begun)
                    for depth in depths:
                        begun = time.perf_counter()
                        reranker.rerank(text, found, texts.__getitem__, depth)
                        rerank_t[depth].append(time.perf_counter() - begun)

    base = statistics.median(search_t) * 1000
    rows = [{"stage": "default search", "p50_ms": base, "p95_ms": percentile(search_t, 95), "x_search": 1.0}]
    for depth, times in rerank_t.items():
        p50 = statistics.median(times) * 1000
        rows.append(
            {"stage": f"rerank {depth}", "p50_ms": p50, "p95_ms": percentile(times, 95), "x_search": p50 / base}
        )
    if args.json:
        print(json.dumps({"load_s": load_s, "searches": len(search_t), "rows": rows}, indent=2))
        return
    print(f"model load in process: {load_s:.3f} s; {len(search_t)} searches\n")
    print("| stage | p50 ms | p95 ms | p50 x default search |")
    print("|---|---:|---:|---:|")
    for r in rows:
        print(f"| {r['stage']} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | {r['x_search']:.1f}x |")


if __name__ == "__main__":
    main()
