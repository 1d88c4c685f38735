"""Fusion of several rankings, the usage-prior boost and the final cut.

Reciprocal-rank fusion (Cormack et al. 2009): ``score(t) = sum_r w_r / (k + rank_r(t))``,
where tied scores in one ranking share the better rank, so a ranker that cannot tell
two tools apart does not favour one by name. Weighted fusion: ``sum_r w_r * s_r(t) /
max_t s_r(t)`` (each ranking scaled to 0..1 by its best score; negative scores count 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Literal

import attrs

from greenroom import Ranking, ScoredTool, sort_scored

FusionMethod = Literal["rrf", "weighted"]


@attrs.frozen
class CompositeRanking(Ranking):
    """A ranking fused from several internal rankers, which it keeps in ``parts``.

    To any fuser it is one ordinary ``Ranking``; the search-ranking fuser unpacks it so
    its own rankers and third-party ones are fused in one level, each with its weight.
    """

    ranker: str
    results: tuple[ScoredTool, ...]
    parts: tuple[Ranking, ...] = ()


def shared_ranks(results: Sequence[ScoredTool]) -> list[int]:
    """1-based ranks where equal scores share the best rank (1, 2, 2, 4)."""
    ranks: list[int] = []
    prev: float | None = None
    for i, s in enumerate(results):
        if prev is None or s.score != prev:
            rank = i + 1
        prev = s.score
        ranks.append(rank)
    return ranks


def rrf(
    rankings: Sequence[Ranking], weights: Callable[[str], float], k: float = 60.0, depth: int = 100
) -> list[ScoredTool]:
    """Reciprocal-rank fusion of the rankings' first ``depth`` results."""
    acc: dict[str, float] = {}
    for ranking in rankings:
        w = weights(ranking.ranker)
        if w <= 0:
            continue
        results = ranking.results[:depth]
        for rank, s in zip(shared_ranks(results), results, strict=False):
            acc[s.name] = acc.get(s.name, 0.0) + w / (k + rank)
    return sort_scored([ScoredTool(n, v) for n, v in acc.items()])


def weighted(rankings: Sequence[Ranking], weights: Callable[[str], float], depth: int = 100) -> list[ScoredTool]:
    """Weighted sum of scores scaled by each ranking's best score."""
    acc: dict[str, float] = {}
    for ranking in rankings:
        w = weights(ranking.ranker)
        results = ranking.results[:depth]
        if w <= 0 or not results:
            continue
        top = max(s.score for s in results)
        if top <= 0:
            continue
        for s in results:
            acc[s.name] = acc.get(s.name, 0.0) + w * max(s.score, 0.0) / top
    return sort_scored([ScoredTool(n, v) for n, v in acc.items() if v > 0])


def fuse(
    rankings: Sequence[Ranking],
    *,
    method: FusionMethod = "rrf",
    weights: Mapping[str, float] | None = None,
    default_weight: float = 1.0,
    k: float = 60.0,
    depth: int = 100,
) -> list[ScoredTool]:
    """Fuse rankings; a single ranking passes through with its own scores."""
    table = dict(weights or {})

    def weight(name: str) -> float:
        return table.get(name, default_weight)

    live = [r for r in rankings if weight(r.ranker) > 0]
    if len(live) == 1:
        return sort_scored(list(live[0].results[:depth]))
    if method == "weighted":
        return weighted(live, weight, depth)
    return rrf(live, weight, k, depth)


def prior_boost(scored: Sequence[ScoredTool], prior: Callable[[str], float], weight: float) -> list[ScoredTool]:
    """Multiply each score by ``1 + weight * p(tool)`` and re-sort: among near-equal
    scores the tools this agent uses more often come first."""
    if weight <= 0:
        return list(scored)
    return sort_scored(
        [ScoredTool(s.name, s.score * (1.0 + weight * max(0.0, min(1.0, prior(s.name))))) for s in scored]
    )


def cut(scored: Sequence[ScoredTool], min_score_ratio: float, limit: int) -> list[ScoredTool]:
    """Keep scores of at least ``min_score_ratio`` times the best, then the first ``limit``."""
    out = list(scored)
    if out and min_score_ratio > 0:
        floor = out[0].score * min_score_ratio
        out = [s for s in out if s.score >= floor]
    return out[: max(0, limit)]
