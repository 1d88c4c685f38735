"""Micro-benchmark of ToolSearch ranking at scale: the search-ranking plugin against plain bm25s.

Catalogs of 1,000, 10,000 and 100,000 tools are built at run time from every
``tools.jsonl`` in ``../shared/datasets`` (concatenated, then repeated with unique names
``name__r7``, descriptions and schemas kept); queries are the keywords form of requests
from every ``queries.jsonl`` (an evenly spaced sample), as a model writes a ToolSearch
query. For each size, in the same run:

- the p50 of one search through the plugin's hooks, as the runtime makes it
  (``greenroom_rank_tools`` then ``greenroom_search_tools``, default config: keyword and
  bm25 fused), with candidates = every tool, and = 90% of them (the same list object on
  every search, as the deferred-tools plugin passes the still-deferred tools); and, for
  reference, 90% passed as a new list on every search;
- the p50 of plain ``bm25s`` (tokenize the query, ``retrieve`` the top 5) over
  ``name description`` of the same tools: the baseline every search figure is divided by;
- the first search in a new process (imports, catalog digest, indexes, one search) with
  a cold disk cache (an empty ``GREENROOM_HOME``) and a warm one (the same home, again),
  next to building the plain bm25s index in that process.

Today's default and the default before fielded documents and query splitting
(``default-v1``, ``greenroom_ranking.config.V1_SETTINGS``) are measured side by side in
the same run: their search p50 (interleaved with the others), their index build (each
into an empty index cache, with nothing shared in the process) and their cold and warm
first search.

Measurements of the plugin and the baseline are interleaved query by query, so a busy
machine slows both alike. Target: every search at most 3x bm25s.

    python benchmarks/search_scale.py [--sizes 1000,10000,100000] [--queries 300] [--no-first]

Nothing generated is written into the project except the results, in
benchmarks/results/search_scale.json; datasets absent: says so and exits 0.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
from rich.console import Console
from rich.table import Table

from greenroom import SearchQuery, ToolDescriptor

ROOT = Path(__file__).resolve().parents[1]
DATASETS = Path(os.environ.get("GREENROOM_DATASETS", ROOT.parent / "shared" / "datasets"))
RESULTS = ROOT / "benchmarks" / "results" / "search_scale.json"
TARGET = 3.0
WARMUP = 20


def base_tools() -> list[ToolDescriptor]:
    """Every dataset's tools, each name once."""
    from greenroom_ranking.evaluate import load_tools

    seen: dict[str, ToolDescriptor] = {}
    for path in sorted(DATASETS.glob("*/tools.jsonl")):
        for t in load_tools(path):
            seen.setdefault(t.name, t)
    return list(seen.values())


def make_catalog(base: Sequence[ToolDescriptor], size: int) -> list[ToolDescriptor]:
    """``size`` tools: the base catalog repeated, copy ``k`` named ``name__r{k}``."""
    out: list[ToolDescriptor] = []
    k = 0
    while len(out) < size:
        out.extend(attrs.evolve(t, name=f"{t.name}__r{k}") for t in base[: size - len(out)])
        k += 1
    return out


def queries(limit: int) -> list[str]:
    """Keywords forms (a model's ToolSearch query) of an evenly spaced sample of requests."""
    from greenroom_ranking.evaluate import load_queries
    from greenroom_ranking.text import keywords_form

    out: list[str] = []
    files = sorted(DATASETS.glob("*/queries.jsonl"))
    for path in files:
        out.extend(keywords_form(q.text) for q in load_queries(path, limit // max(1, len(files))))
    return [q for q in out if q]


# ----------------------------------------------------------------------------- searches


class PlainBM25:
    """The baseline: bm25s over ``name description``, its own tokenizer and stemmer."""

    def __init__(self, tools: Sequence[ToolDescriptor]) -> None:
        import bm25s
        import Stemmer

        self.bm25s = bm25s
        self.stemmer = Stemmer.Stemmer("english")
        texts = [f"{t.name} {t.description}" for t in tools]
        corpus = bm25s.tokenize(texts, stopwords="en", stemmer=self.stemmer, show_progress=False)
        self.retriever = bm25s.BM25()
        self.retriever.index(corpus, show_progress=False)
        self.k = min(5, len(tools))

    def search(self, text: str) -> Any:
        tokens = self.bm25s.tokenize([text], stopwords="en", stemmer=self.stemmer, show_progress=False)
        return self.retriever.retrieve(tokens, k=self.k, show_progress=False)


def hook_search(plugin: Any) -> Callable[[SearchQuery, Sequence[ToolDescriptor]], Awaitable[Any]]:
    """One search through the plugin's two hooks, as ``Runtime.search`` calls them (in a
    running event loop: a loop per search would cost more than the search)."""

    async def search(query: SearchQuery, candidates: Sequence[ToolDescriptor]) -> Any:
        ranking = await plugin.greenroom_rank_tools(None, query, candidates)
        return plugin.greenroom_search_tools(None, query, candidates, [ranking] if ranking else [])

    return search


def v1_config() -> Any:
    from greenroom_ranking.config import V1_SETTINGS, RankingConfig

    return RankingConfig(**V1_SETTINGS)


def prepare_seconds(plugin: Any, tools: Sequence[ToolDescriptor]) -> float:
    """Build the plugin's indexes from nothing: no corpus shared in the process, an empty
    index cache on disk (a fresh home), as a first run over this catalog would."""
    from greenroom_ranking.cache import forget

    forget()
    os.environ["GREENROOM_HOME"] = tempfile.mkdtemp(prefix="home-", dir=os.environ["GREENROOM_HOME"])
    start = time.perf_counter()
    plugin.engine.prepare(tools)
    return time.perf_counter() - start


def measure_size(base: Sequence[ToolDescriptor], size: int, texts: Sequence[str]) -> dict[str, Any]:
    """p50 of each search kind over the same queries, interleaved (see the module doc)."""
    from greenroom_ranking import SearchRankingPlugin

    tools = make_catalog(base, size)
    rng = random.Random(size)
    subset = [t for t in tools if rng.random() < 0.9]
    plain = PlainBM25(tools)
    plugin = SearchRankingPlugin()
    before = SearchRankingPlugin(v1_config())
    # one build each from nothing, the order alternating with the size
    pair = [("default", plugin), ("default-v1", before)]
    prepare = {label: prepare_seconds(p, tools) for label, p in (pair if size % 2 == 0 else pair[::-1])}
    search = hook_search(plugin)
    search_v1 = hook_search(before)

    async def plain_search(query: SearchQuery) -> Any:
        return plain.search(query.text)

    kinds: dict[str, Callable[[SearchQuery], Awaitable[Any]]] = {
        "all": lambda q: search(q, tools),
        "all, default-v1": lambda q: search_v1(q, tools),
        "90%": lambda q: search(q, subset),
        "90%, new list": lambda q: search(q, list(subset)),
        "bm25s": plain_search,
    }
    samples: dict[str, list[float]] = {k: [] for k in kinds}
    order = list(kinds)

    async def run_all() -> None:
        for i, text in enumerate(texts):
            query = SearchQuery.parse(text, max_results=5)
            # a new word costs the first kind that meets it a text-index lookup: rotate who goes first
            for kind in order[i % len(order) :] + order[: i % len(order)]:
                start = time.perf_counter()
                await kinds[kind](query)
                if i >= WARMUP:
                    samples[kind].append((time.perf_counter() - start) * 1000)

    anyio.run(run_all)
    p50 = {k: statistics.median(v) for k, v in samples.items()}
    return {
        "tools": size,
        "queries": len(texts) - WARMUP,
        "prepare_s": prepare["default"],
        "prepare_v1_s": prepare["default-v1"],
        "p50_ms": p50,
        "ratio_to_bm25s": {k: p50[k] / p50["bm25s"] for k in kinds if k != "bm25s"},
        "ratio_to_v1": {
            "p50": p50["all"] / p50["all, default-v1"],
            "prepare": prepare["default"] / prepare["default-v1"],
        },
    }


# ----------------------------------------------------------------------------- first search


def first_search_child(size: int, text: str, v1: bool = False) -> None:
    """In a new process: build the catalog (not timed), then time the first search."""
    tools = make_catalog(base_tools(), size)
    start = time.perf_counter()
    from greenroom_ranking import SearchRankingPlugin

    plugin = SearchRankingPlugin(v1_config() if v1 else None)
    search = hook_search(plugin)
    anyio.run(search, SearchQuery.parse(text, max_results=5), tools)
    first = time.perf_counter() - start
    cache = plugin.engine.cache
    start = time.perf_counter()
    PlainBM25(tools)
    plain = time.perf_counter() - start
    print(json.dumps({"first_s": first, "bm25s_index_s": plain, "builds": cache.builds, "loads": cache.loads}))


def first_search(size: int, text: str) -> dict[str, Any]:
    """The first search in a new process with a cold disk cache, then a warm one; the
    same for default-v1 (its own home)."""
    out: dict[str, Any] = {}
    for preset in ("default", "default-v1"):
        with tempfile.TemporaryDirectory(prefix="greenroom-scale-") as home:
            env = {**os.environ, "GREENROOM_HOME": home}
            for label in ("cold", "warm"):
                extra = ["--v1"] if preset == "default-v1" else []
                proc = subprocess.run(
                    [sys.executable, __file__, "--first-search-child", str(size), "--query", text, *extra],
                    env=env,
                    capture_output=True,
                    text=True,
                    check=True,
                )
                key = label if preset == "default" else f"{label}_v1"
                out[key] = json.loads(proc.stdout.strip().splitlines()[-1])
    out["warm_to_cold"] = out["warm"]["first_s"] / out["cold"]["first_s"]
    out["cold_to_v1"] = out["cold"]["first_s"] / out["cold_v1"]["first_s"]
    return out


# ----------------------------------------------------------------------------- report


def report(console: Console, rows: list[dict[str, Any]]) -> None:
    table = Table(title=f"ToolSearch p50 through the plugin's hooks vs plain bm25s (target: at most {TARGET:g}x)")
    columns = ("tools", "bm25s ms", "all ms", "all / bm25s", "90% ms", "90% / bm25s", "90% new list / bm25s")
    for col in (*columns, "v1 ms", "all / v1", "build s", "v1 build s", "build / v1"):
        table.add_column(col, justify="right")
    for r in rows:
        p, x, v = r["p50_ms"], r["ratio_to_bm25s"], r["ratio_to_v1"]
        table.add_row(
            f"{r['tools']:,}",
            f"{p['bm25s']:.3f}",
            f"{p['all']:.3f}",
            f"{x['all']:.2f}x",
            f"{p['90%']:.3f}",
            f"{x['90%']:.2f}x",
            f"{x['90%, new list']:.2f}x",
            f"{p['all, default-v1']:.3f}",
            f"{v['p50']:.2f}x",
            f"{r['prepare_s']:.2f}",
            f"{r['prepare_v1_s']:.2f}",
            f"{v['prepare']:.2f}x",
        )
    console.print(table)
    firsts = [r for r in rows if "first" in r]
    if not firsts:
        return
    table = Table(title="First search in a new process (imports, digest, indexes, one search)")
    columns = ("tools", "cold s", "warm s", "warm / cold", "cold v1 s", "warm v1 s", "cold / v1")
    for col in (*columns, "built cold", "read warm", "bm25s index s"):
        table.add_column(col, justify="right")
    for r in firsts:
        f = r["first"]
        table.add_row(
            f"{r['tools']:,}",
            f"{f['cold']['first_s']:.2f}",
            f"{f['warm']['first_s']:.2f}",
            f"{f['warm_to_cold']:.2f}x",
            f"{f['cold_v1']['first_s']:.2f}",
            f"{f['warm_v1']['first_s']:.2f}",
            f"{f['cold_to_v1']:.2f}x",
            ", ".join(sorted(f["cold"]["builds"])),
            ", ".join(sorted(f["warm"]["loads"])),
            f"{f['warm']['bm25s_index_s']:.2f}",
        )
    console.print(table)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated catalog sizes")
    parser.add_argument("--queries", type=int, default=300, help="queries sampled across the datasets")
    parser.add_argument("--no-first", action="store_true", help="skip the first-search-in-a-new-process runs")
    parser.add_argument("--first-search-child", type=int, default=0, help=argparse.SUPPRESS)
    parser.add_argument("--query", default="", help=argparse.SUPPRESS)
    parser.add_argument("--v1", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.first_search_child:
        first_search_child(args.first_search_child, args.query, args.v1)
        return 0
    console = Console(width=200)  # wide tables stay whole in a log file too
    if not DATASETS.is_dir():
        console.print(f"[yellow]datasets not found at {DATASETS}; nothing to measure[/]")
        return 0
    base = base_tools()
    texts = queries(args.queries + WARMUP)
    rows: list[dict[str, Any]] = []
    # the in-process runs share this home's disk cache; it is thrown away at the end
    with tempfile.TemporaryDirectory(prefix="greenroom-scale-") as home:
        os.environ["GREENROOM_HOME"] = home
        for size in (int(s) for s in args.sizes.split(",") if s.strip()):
            console.print(f"[dim]{size:,} tools...[/]")
            row = measure_size(base, size, texts)
            if not args.no_first:
                row["first"] = first_search(size, texts[0])
            rows.append(row)
    report(console, rows)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    meta = {"python": platform.python_version(), "machine": platform.machine(), "cpus": os.cpu_count()}
    RESULTS.write_text(json.dumps({"meta": meta, "target": TARGET, "sizes": rows}, indent=2) + "\n")
    console.print(f"[dim]results: {RESULTS.relative_to(ROOT)}[/]")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
