"""Evaluate rankers on a catalog with known answers: ``greenroom rank eval`` and the benchmark.

Formats are those of the shared datasets: ``tools.jsonl`` (one tool a line: name,
description, parameters, group) and ``queries.jsonl`` (one query a line: query, gold).
Each query is asked in its full form (the user's request) and, optionally, in a
keywords-only form (its first four content words), which is closer to what a model
writes in a ToolSearch call.

Metrics per query, averaged: Recall@5 and Recall@10 (share of gold tools in the top k),
nDCG@10 (binary relevance), MRR (1 / rank of the first gold tool in the top 10, else 0)
and all-gold@5 (1 when every gold tool is in the top 5). Index build time and per-query
latency (p50, p95) are measured on the same run.
"""

from __future__ import annotations

import inspect
import json
import math
import statistics
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from greenroom import SearchQuery, ToolDescriptor, load_catalog
from greenroom.kit import MAX_ARGUMENT_DEPTH, text_nesting_exceeds
from greenroom_ranking.config import BUILTIN_RANKERS, HYBRID_SETTINGS, HYBRID_V1_SETTINGS, V1_SETTINGS, RankingConfig
from greenroom_ranking.text import keywords_form

QueryForm = Literal["full", "keywords"]
BASELINE = "bm25-plain"
DEFAULT = "default"
HYBRID = "hybrid"
V1 = "-v1"


@attrs.frozen
class EvalQuery:
    text: str
    gold: tuple[str, ...]
    id: str = ""
    where: str = attrs.field(default="", eq=False)
    """``file:line`` of the query, for what is said about it."""


@attrs.frozen
class EvalResult:
    """One ranker on one query form of one dataset."""

    ranker: str
    form: str
    queries: int
    recall_at_5: float
    recall_at_10: float
    ndcg_at_10: float
    mrr: float
    all_gold_at_5: float
    build_seconds: float
    p50_ms: float
    p95_ms: float

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


METRICS = ("recall_at_5", "recall_at_10", "ndcg_at_10", "mrr", "all_gold_at_5")


# ----------------------------------------------------------------------------- loading


def load_tools(path: str | Path) -> list[ToolDescriptor]:
    return [t.descriptor for t in load_catalog(path)]


def load_queries(path: str | Path, limit: int | None = None) -> list[EvalQuery]:
    """Read queries; ``limit`` keeps an evenly spaced sample (every split and difficulty
    stays represented, and the same ``limit`` always picks the same queries)."""
    out: list[EvalQuery] = []
    with Path(path).open(encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            if not line.strip():
                continue
            where = f"{path}:{lineno}"
            if text_nesting_exceeds(line):  # json would recurse once per level, into a RecursionError
                raise ValueError(f"{where}: nested more than {MAX_ARGUMENT_DEPTH} levels deep")
            try:
                item = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
            if not (isinstance(item, dict) and isinstance(item.get("query"), str) and item.get("gold")):
                raise ValueError(f"{where}: expected {{'query': str, 'gold': [names]}}")
            out.append(EvalQuery(item["query"], tuple(item["gold"]), str(item.get("id", lineno)), where))
    return sample(out, limit)


def missing_gold(queries: Sequence[EvalQuery], tools: Sequence[ToolDescriptor]) -> list[tuple[EvalQuery, list[str]]]:
    """The queries whose gold tools are not all in the catalog, each with the missing
    names: no ranker can find those, so they only lower every ranker's figures."""
    names = {t.name for t in tools}
    out = []
    for q in queries:
        missing = [g for g in q.gold if g not in names]
        if missing:
            out.append((q, missing))
    return out


def sample(items: list[EvalQuery], limit: int | None) -> list[EvalQuery]:
    if limit is None or limit >= len(items):
        return items
    if limit <= 0:
        return []
    step = len(items) / limit
    return [items[int(i * step)] for i in range(limit)]


def query_text(q: EvalQuery, form: QueryForm) -> str:
    return q.text if form == "full" else keywords_form(q.text)


# ----------------------------------------------------------------------------- metrics


def recall_at(ranked: Sequence[str], gold: Sequence[str], k: int) -> float:
    g = set(gold)
    return len(g.intersection(ranked[:k])) / len(g) if g else 0.0


def ndcg_at(ranked: Sequence[str], gold: Sequence[str], k: int = 10) -> float:
    g = set(gold)
    dcg = sum(1.0 / math.log2(i + 2) for i, n in enumerate(ranked[:k]) if n in g)
    ideal = sum(1.0 / math.log2(i + 2) for i in range(min(len(g), k)))
    return dcg / ideal if ideal else 0.0


def reciprocal_rank(ranked: Sequence[str], gold: Sequence[str], k: int = 10) -> float:
    g = set(gold)
    for i, n in enumerate(ranked[:k]):
        if n in g:
            return 1.0 / (i + 1)
    return 0.0


def all_gold_at(ranked: Sequence[str], gold: Sequence[str], k: int = 5) -> float:
    return 1.0 if set(gold) <= set(ranked[:k]) else 0.0


def percentile(values: Sequence[float], q: float) -> float:
    if not values:
        return 0.0
    if len(values) == 1:
        return values[0]
    return statistics.quantiles(values, n=100, method="inclusive")[int(q) - 1]


# ----------------------------------------------------------------------------- rankers


def ranker_config(spec: str, base: RankingConfig | None = None) -> RankingConfig:
    """The config a ranker spec means: ``default`` (the configured set), ``hybrid`` (the
    embedding preset, ``HYBRID_SETTINGS``), one built-in ranker (``bm25``), or a fusion
    of several (``keyword+bm25``). A ``-v1`` suffix (``default-v1``, ``hybrid-v1``,
    ``bm25-v1``) measures the spec as ranking was before fielded documents and query
    splitting (``V1_SETTINGS``). Priors play no part in an offline evaluation."""
    base = base or RankingConfig()
    if spec.endswith(V1):
        spec = spec[: -len(V1)]
        extra = HYBRID_V1_SETTINGS if spec == HYBRID else V1_SETTINGS
        base = RankingConfig(**{**attrs.asdict(base, recurse=False), **extra})
        if spec == HYBRID:
            return base
    if spec == DEFAULT:
        return base
    if spec == HYBRID:
        return RankingConfig(**{**attrs.asdict(base, recurse=False), **HYBRID_SETTINGS})
    names = tuple(p.strip() for p in spec.split("+") if p.strip())
    unknown = [n for n in names if n not in BUILTIN_RANKERS]
    if not names or unknown:
        raise ValueError(
            f"unknown ranker {spec!r}: use default, hybrid, {', '.join(BUILTIN_RANKERS)}, a+b, "
            "any of them with -v1 (ranking before 2026-11), or the name of an installed ranker "
            "plugin (greenroom plugins lists them)"
        )
    weights = {n: base.weights.get(n, base.default_weight) for n in names}
    return RankingConfig(**{**attrs.asdict(base, recurse=False), "rankers": names, "weights": weights})


def evaluate(
    tools: Sequence[ToolDescriptor],
    queries: Sequence[EvalQuery],
    ranker: str,
    *,
    form: QueryForm = "full",
    config: RankingConfig | None = None,
    k: int = 10,
    progress: Callable[[int], None] | None = None,
    record: Callable[[EvalQuery, list[str]], None] | None = None,
) -> EvalResult:
    """Build the ranker's index once, then run every query one at a time (``record`` is
    given each query and its ranked names, for metrics over a subset of the queries).

    The build is a real one, timed: not read from the on-disk index cache nor shared with
    another evaluation in this process (the embedding ranker still reads its own matrix
    cache, as a restarted process would)."""
    start = time.perf_counter()
    search = _searcher(ranker, config, tools)
    build = time.perf_counter() - start
    sums = dict.fromkeys(METRICS, 0.0)
    latencies: list[float] = []
    for q in queries:
        query = SearchQuery.parse(query_text(q, form), max_results=k)
        t0 = time.perf_counter()
        ranked = search(query)
        latencies.append((time.perf_counter() - t0) * 1000)
        if record is not None:
            record(q, ranked)
        sums["recall_at_5"] += recall_at(ranked, q.gold, 5)
        sums["recall_at_10"] += recall_at(ranked, q.gold, 10)
        sums["ndcg_at_10"] += ndcg_at(ranked, q.gold, 10)
        sums["mrr"] += reciprocal_rank(ranked, q.gold, 10)
        sums["all_gold_at_5"] += all_gold_at(ranked, q.gold, 5)
        if progress is not None:
            progress(1)
    n = max(1, len(queries))
    return EvalResult(
        ranker=ranker,
        form=form,
        queries=len(queries),
        build_seconds=build,
        p50_ms=percentile(latencies, 50),
        p95_ms=percentile(latencies, 95),
        **{m: v / n for m, v in sums.items()},
    )


Search = Callable[[SearchQuery], list[str]]


def _searcher(ranker: str, config: RankingConfig | None, tools: Sequence[ToolDescriptor]) -> Search:
    """A built-in ranker spec's engine, prepared; or an installed plugin's ranker by name."""
    if not _is_builtin_spec(ranker):
        installed = installed_ranker(ranker)
        if installed is not None:
            return lambda query: installed(query, tools)
    from greenroom_ranking.engine import RankingEngine  # numpy and bm25s: only when something is ranked

    engine = RankingEngine(attrs.evolve(ranker_config(ranker, config), index_cache=False), shared=False)
    engine.prepare(tools)
    return lambda query: [s.name for s in engine.search(query, tools)]


def _is_builtin_spec(spec: str) -> bool:
    spec = spec[: -len(V1)] if spec.endswith(V1) else spec
    return spec in (DEFAULT, HYBRID) or all(p.strip() in BUILTIN_RANKERS for p in spec.split("+"))


def installed_ranker(name: str) -> Callable[[SearchQuery, Sequence[ToolDescriptor]], list[str]] | None:
    """The ranker of the installed plugin called ``name`` (its ``greenroom_rank_tools``
    with the plugin's default config), or None when no plugin has that name."""
    from greenroom import discover_plugins

    record = next((r for r in discover_plugins() if r.name == name), None)
    if record is None:
        return None
    if record.cls is None:
        raise ValueError(f"the ranker plugin {name!r} ({record.label}) failed to load: {record.failure}")
    if not hasattr(record.cls, "greenroom_rank_tools"):
        raise ValueError(f"the plugin {name!r} ({record.label}) has no greenroom_rank_tools hook: it is no ranker")
    plugin = record.cls()

    def search(query: SearchQuery, tools: Sequence[ToolDescriptor]) -> list[str]:
        answer = plugin.greenroom_rank_tools(None, query, tools)  # type: ignore[attr-defined]
        if inspect.isawaitable(answer):
            import anyio

            async def wait() -> Any:
                return await answer

            answer = anyio.run(wait)
        return [] if answer is None else [s.name for s in answer.results[: query.max_results]]

    return search


def relative(results: Sequence[EvalResult], baseline: str = BASELINE) -> dict[tuple[str, str], dict[str, float | None]]:
    """Each result's metrics divided by the baseline's on the same query form; None where
    the baseline's is 0 (no ratio: it found nothing)."""
    base = {r.form: r for r in results if r.ranker == baseline}
    out: dict[tuple[str, str], dict[str, float | None]] = {}
    for r in results:
        b = base.get(r.form)
        if b is None:
            continue
        out[(r.ranker, r.form)] = {m: (getattr(r, m) / getattr(b, m)) if getattr(b, m) else None for m in METRICS}
    return out
