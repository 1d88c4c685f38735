"""What every ranker's index is, and how scores become a ranking.

An index is built once over a corpus (``corpus.RankingCorpus``), then
answers queries for any subset of it: the candidates of one search, already narrowed to
tools holding every ``+required`` term, arrive as a boolean mask. Every ranker scores
the whole corpus in numpy and picks its best the same way, here: as positions and
scores (``top_positions``), which the engine fuses without making an object per
candidate, or as ``ScoredTool`` lists (``top_scored``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np

from greenroom import ScoredTool, SearchQuery


class Index(Protocol):
    """One ranker's index over a corpus."""

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        """Scored tools (score > 0), best first, ties by name, at most ``depth``; only
        positions where ``allowed`` is true (None: all)."""
        ...


class ArrayIndex(Index, Protocol):
    """An index that also answers as arrays, so a search builds no object per candidate."""

    def top(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> tuple[np.ndarray, np.ndarray]:
        """``search`` as corpus positions and their scores, in the same order."""
        ...


def top_positions(scores: np.ndarray, depth: int, ranks: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions and scores of the best ``depth`` positive scores: best first, ties broken
    by name (``ranks``: ``RankingCorpus.ranks``), as ``greenroom.search.sort_scored`` orders them.

    Only the best ``depth`` are sorted: a common word can give half a large corpus a
    positive score, and sorting all of them would cost more than scoring did.
    """
    positive = np.flatnonzero(scores > 0)
    if positive.size == 0 or depth <= 0:
        return positive[:0], scores[positive[:0]]
    values = scores[positive]
    if positive.size > depth:
        # the depth-th best score; everything above it is in, and of the tools tied at it
        # the first by name fill the rest
        cut = np.partition(values, positive.size - depth)[positive.size - depth]
        above = np.flatnonzero(values > cut)
        tied = np.flatnonzero(values == cut)
        room = depth - above.size
        if tied.size > room:
            tied = tied[np.argpartition(ranks[positive[tied]], room - 1)[:room]]
        keep = np.concatenate([above, tied])
        positive, values = positive[keep], values[keep]
    order = np.lexsort((ranks[positive], -values))
    return positive[order], values[order]


def scored(names: Sequence[str], positions: np.ndarray, scores: np.ndarray) -> list[ScoredTool]:
    """``ScoredTool``s of these positions and scores, in their order."""
    return list(map(ScoredTool, map(names.__getitem__, positions.tolist()), scores.tolist()))


def top_scored(names: Sequence[str], scores: np.ndarray, depth: int, ranks: np.ndarray) -> list[ScoredTool]:
    """The best ``depth`` positive scores as ScoredTool (``top_positions``)."""
    return scored(names, *top_positions(scores, depth, ranks))
