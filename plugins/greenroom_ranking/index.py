"""What every ranker's index is and the numpy helpers they share.

An index is built once over a catalog, then answers queries for any subset of it: the
candidates of one search arrive as a boolean mask. The lexical rankers and the embedding
ranker score in numpy and turn scores into ``ScoredTool`` lists the same way, here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from greenroom import ScoredTool, SearchQuery, ToolDescriptor, passes_required
from greenroom_ranking.config import RankingConfig


class Index(Protocol):
    """One ranker's index over a catalog."""

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        """Scored tools (score > 0), best first, ties by name, at most ``depth``; only
        positions where ``allowed`` is true (None: all) and tools passing ``+required``."""
        ...


Builder = Callable[[Sequence[ToolDescriptor], RankingConfig], Index]


def required_mask(tools: Sequence[ToolDescriptor], query: SearchQuery, allowed: np.ndarray | None) -> np.ndarray | None:
    """Combine the candidate mask with ``+required`` terms (checked only where allowed)."""
    if not query.required:
        return allowed
    mask = np.zeros(len(tools), dtype=bool)
    positions = range(len(tools)) if allowed is None else np.flatnonzero(allowed)
    for i in positions:
        if passes_required(tools[int(i)], query.required):
            mask[int(i)] = True
    return mask


def name_ranks(names: Sequence[str]) -> np.ndarray:
    """Each name's position in sorted order, so ties can be broken by name in numpy."""
    ranks = np.empty(len(names), dtype=np.int64)
    if names:
        ranks[np.argsort(np.asarray(names, dtype=str), kind="stable")] = np.arange(len(names))
    return ranks


def top_scored(
    names: Sequence[str], scores: np.ndarray, depth: int, ranks: np.ndarray | None = None
) -> list[ScoredTool]:
    """The best ``depth`` positive scores as ScoredTool: best first, ties broken by name
    (``ranks`` from ``name_ranks``), as ``greenroom.search.sort_scored`` orders them."""
    positive = np.flatnonzero(scores > 0)
    if positive.size == 0:
        return []
    if ranks is None:
        ranks = name_ranks(names)
    order = positive[np.lexsort((ranks[positive], -scores[positive]))[:depth]]
    return [ScoredTool(names[int(i)], float(scores[int(i)])) for i in order]
