"""Fusion of several rankings, the usage-prior boost and the final cut.

Reciprocal-rank fusion (Cormack et al. 2009): ``score(t) = sum_r w_r / (k + rank_r(t))``,
where tied scores in one ranking share the better rank, so a ranker that cannot tell
two tools apart does not favour one by name. Weighted fusion: ``sum_r w_r * s_r(t) /
max_t s_r(t)`` (each ranking scaled to 0..1 by its best score; negative scores count 0).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

import attrs
import numpy as np

from greenroom import Ranking, ScoredTool
from greenroom.kit import sort_scored
from greenroom_ranking.index import scored

FusionMethod = Literal["rrf", "weighted"]


@attrs.frozen(eq=False)
class RankedArrays:
    """A fused ranking and its parts as corpus positions and scores (best first, ties by
    name): what ``CompositeRanking`` holds until someone reads its ``ScoredTool``s."""

    names: Sequence[str]  # the corpus's names, by position
    ranks: np.ndarray  # each position's place in name order
    owner: object  # what the positions index (the engine's corpus)
    positions: np.ndarray
    scores: np.ndarray
    parts: tuple[tuple[str, np.ndarray, np.ndarray], ...]


class CompositeRanking(Ranking):
    """A ranking fused from several internal rankers, which it keeps in ``parts``.

    To any fuser it is one ordinary ``Ranking``; the search-ranking fuser unpacks it so
    its own rankers and third-party ones are fused in one level, each with its weight.
    Made from arrays (``of_arrays``), it builds its ``results`` and ``parts`` on first
    reading: the engine that made it reads the arrays, and most searches never need a
    ``ScoredTool`` per candidate.
    """

    __slots__ = ("_arrays", "_parts", "_results")
    _arrays: RankedArrays | None
    _parts: tuple[Ranking, ...] | None
    _results: tuple[ScoredTool, ...] | None

    def __init__(self, ranker: str, results: Sequence[ScoredTool] = (), parts: Sequence[Ranking] = ()) -> None:
        put = object.__setattr__  # the class is frozen: fields are set once, here
        put(self, "ranker", ranker)
        put(self, "_results", tuple(results))
        put(self, "_parts", tuple(parts))
        put(self, "_arrays", None)

    @classmethod
    def of_arrays(cls, ranker: str, arrays: RankedArrays) -> CompositeRanking:
        made = cls(ranker)
        object.__setattr__(made, "_results", None)
        object.__setattr__(made, "_parts", None)
        object.__setattr__(made, "_arrays", arrays)
        return made

    @property
    def arrays(self) -> RankedArrays | None:
        """The arrays it was made from (None: made from ``ScoredTool``s)."""
        return self._arrays

    @property  # type: ignore[override]  # read-only in Ranking too (frozen)
    def results(self) -> tuple[ScoredTool, ...]:
        made = self._results
        if made is None:
            a = self._arrays
            assert a is not None  # made from arrays when it has no results yet
            made = tuple(scored(a.names, a.positions, a.scores))
            object.__setattr__(self, "_results", made)
        return made

    @property
    def parts(self) -> tuple[Ranking, ...]:
        made = self._parts
        if made is None:
            a = self._arrays
            assert a is not None  # made from arrays when it has no parts yet
            made = tuple(Ranking(r, tuple(scored(a.names, p, v))) for r, p, v in a.parts)
            object.__setattr__(self, "_parts", made)
        return made

    def __eq__(self, other: object) -> bool:
        if other.__class__ is not self.__class__:
            return NotImplemented
        assert isinstance(other, CompositeRanking)
        return (self.ranker, self.results, self.parts) == (other.ranker, other.results, other.parts)

    def __hash__(self) -> int:
        return hash((self.ranker, self.results, self.parts))

    def __repr__(self) -> str:
        return f"CompositeRanking(ranker={self.ranker!r}, results={self.results!r}, parts={self.parts!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (CompositeRanking, (self.ranker, self.results, self.parts))


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


def fuse_arrays(
    parts: Sequence[tuple[str, np.ndarray, np.ndarray]],
    ranks: np.ndarray,
    *,
    method: FusionMethod = "rrf",
    weights: Mapping[str, float] | None = None,
    default_weight: float = 1.0,
    k: float = 60.0,
    depth: int = 100,
) -> tuple[np.ndarray, np.ndarray]:
    """``fuse`` of rankings given as (ranker, positions, scores) over one corpus
    (``ranks``: its names' order): the same scores, added in the same order, sorted the
    same way, as positions and scores."""
    table = dict(weights or {})
    live = [(table.get(r, default_weight), p[:depth], s[:depth]) for r, p, s in parts]
    live = [part for part in live if part[0] > 0]
    if len(live) == 1:
        _, positions, values = live[0]
        order = np.lexsort((ranks[positions], -values))
        return positions[order], values[order].astype(np.float64)
    # every position's sum, in a corpus-sized array: the same order of additions as the
    # dict of ``rrf`` and ``weighted`` (from 0.0, ranking by ranking; a ranking names a
    # tool once), without sorting positions to group them
    sums = np.zeros(ranks.size, dtype=np.float64)
    for w, positions, values in live:
        values = values.astype(np.float64)
        if method == "weighted":
            top = float(values.max()) if values.size else 0.0
            if top <= 0:
                continue
            sums[positions] += w * np.maximum(values, 0.0) / top
        else:
            fresh = np.ones(values.size, dtype=bool)
            fresh[1:] = values[1:] != values[:-1]
            # the place of each run's first result: tied scores share the better rank
            shared = np.maximum.accumulate(np.where(fresh, np.arange(1, values.size + 1), 0))
            sums[positions] += w / (k + shared)
    # what ``weighted`` keeps (a sum over 0); every ``rrf`` term is over 0 (w > 0, k > 0)
    found = np.flatnonzero(sums > 0)
    values = sums[found]
    order = np.lexsort((ranks[found], -values))
    return found[order], values[order]


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
