"""``Reranker``: a cross-encoder's order for the head of a fused result list.

The head is the best ``depth`` results (at least as many as the search returns, so the
tools cut off below it are never ones the search would have shown). Each is scored with
the query by the model; the head comes back best first with the model's relevance as
its score (the logistic of its logit, in (0, 1)), ties by name as everywhere else. One
model is loaded per folder and process, and each search runs it on one BLAS thread: on
a busy 2-core machine more threads made one search's tail latency worse, not better.
"""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from greenroom import ScoredTool


class Reranker:
    """Re-scores (query, tool text) pairs with one cross-encoder model folder."""

    def __init__(self, model_dir: str | Path, *, max_length: int = 256) -> None:
        from greenroom_ranking.light.cross import BertCrossEncoder
        from greenroom_ranking.light.threads import OneBlasThread

        self.model = BertCrossEncoder(Path(model_dir), max_length=max_length)
        self.pairs_scored = 0
        self._lock = threading.Lock()
        self._one_thread = OneBlasThread().held

    def scores(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """The model's relevance of each text to ``query``, in (0, 1), in the order given."""
        with self._lock, self._one_thread():
            logits = self.model.score(query, texts)
            self.pairs_scored += len(texts)
        return 1.0 / (1.0 + np.exp(-logits.astype(np.float64)))

    def rerank(
        self, query: str, results: Sequence[ScoredTool], text_of: Callable[[str], str], depth: int
    ) -> list[ScoredTool]:
        """The best ``depth`` of ``results`` in the model's order, scored by it; the rest
        are dropped (``depth`` is at least what the caller returns)."""
        head = list(results[: max(depth, 0)])
        if not head:
            return []
        relevance = self.scores(query, [text_of(r.name) for r in head])
        scored = [ScoredTool(r.name, float(s)) for r, s in zip(head, relevance, strict=True)]
        scored.sort(key=lambda s: (-s.score, s.name))
        return scored


@functools.lru_cache(maxsize=2)
def reranker(model_dir: str, max_length: int = 256) -> Reranker:
    """The reranker of ``model_dir``, loaded once per process (memory-mapped weights)."""
    return Reranker(model_dir, max_length=max_length)
