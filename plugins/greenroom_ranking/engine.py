"""The ranking machinery the plugin's hooks and the evaluator share.

A ``RankingEngine`` runs the configured rankers over a corpus (indexes cached by
``CorpusCache``, in the process and on disk), fuses their rankings with any other
ranker's, keeps the eligible candidates, applies the usage-prior boost and cuts. It
knows nothing of hooks or runs: the plugin feeds it what a hook receives, ``greenroom
rank eval`` feeds it a dataset.

A search costs what its hits and its results cost: the candidates are a cached mask
(``CorpusCache.view``), ``+required`` terms narrow that mask once for every ranker, and
nothing after the rankers looks at more than their results.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import cast

import attrs
import numpy as np

from greenroom import Ranking, ScoredTool, SearchQuery, ToolDescriptor
from greenroom.kit import passes_required
from greenroom_ranking.analysis.routing import RoutingIndex
from greenroom_ranking.analysis.split import merge, split_request
from greenroom_ranking.cache import CorpusCache, View
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.corpus import RankingCorpus
from greenroom_ranking.fusion import CompositeRanking, RankedArrays, cut, fuse, fuse_arrays, prior_boost
from greenroom_ranking.index import ArrayIndex, Index, scored

Prior = Callable[[str], float]
"""A tool's learned use probability (``ToolPriors.get``)."""


class RankingEngine:
    """Configured rankers, fused with any other ranking, over cached indexes.

    ``name`` labels the composite ranking this engine answers with, so it can tell its
    own answer from a third-party ranker's when it fuses them. ``shared=False`` keeps its
    corpora to itself instead of sharing them with the process's other engines.
    """

    def __init__(self, config: RankingConfig, name: str = "search-ranking", *, shared: bool = True) -> None:
        self.config = config
        self.name = name
        self.cache = CorpusCache(config, shared=shared)

    def prepare(self, candidates: Sequence[ToolDescriptor]) -> None:
        """Build every configured ranker's index for these candidates now (not at the
        first query); later calls with the same corpus are free."""
        view = self.cache.view(candidates)
        for ranker in self.config.rankers:
            self.cache.index(view.corpus, ranker)

    def rank(
        self,
        query: SearchQuery,
        candidates: Sequence[ToolDescriptor],
        groups: Mapping[str, str] | None = None,
        catalog: Sequence[ToolDescriptor] | None = None,
    ) -> CompositeRanking:
        """Run the configured rankers; their fusion, with each one's ranking in ``parts``.

        ``groups`` (group id -> description, a run's ``ctx.groups``) goes into the routing
        ranker's group documents. ``catalog`` (a run's ``ctx.catalog()``), the tools the
        candidates are drawn from: its searchable tools are what is indexed
        (``CorpusCache.view``). A long request that asks for several things is ranked
        part by part and merged (``split_queries``, ``analysis.split``); ``parts`` then
        hold the whole request's rankings."""
        if not candidates:  # nothing to rank: no index is built (or rebuilt) for it
            return CompositeRanking(self.name, (), tuple(Ranking(r, ()) for r in self.config.rankers))
        view = self.cache.view(candidates, catalog)
        corpus = view.corpus
        allowed = view.allowed
        if query.required:
            allowed = self.cache.text(corpus).required(query.required, allowed)
        parts, positions, scores = self._fused(corpus, query, allowed, groups)
        c = self.config
        pieces = split_request(query.text, c.split_min_words) if c.split_queries else []
        if pieces:
            ranked = []
            for piece in pieces:
                sub = attrs.evolve(query, text=piece, terms=SearchQuery.parse(piece).terms)
                ranked.append(self._fused(corpus, sub, allowed, groups)[1:])
            positions, scores = merge((positions, scores), ranked, len(corpus), corpus.ranks, c.split_whole_weight)
        return CompositeRanking.of_arrays(
            self.name, RankedArrays(corpus.names, corpus.ranks, corpus, positions, scores, parts)
        )

    def _fused(
        self, corpus: RankingCorpus, query: SearchQuery, allowed: np.ndarray | None, groups: Mapping[str, str] | None
    ) -> tuple[tuple[tuple[str, np.ndarray, np.ndarray], ...], np.ndarray, np.ndarray]:
        """Each configured ranker's answer for ``query``, and their fusion."""
        c = self.config
        parts = []
        for ranker in c.rankers:
            index = self.cache.index(corpus, ranker)
            if groups and isinstance(index, RoutingIndex):
                index = index.described(groups)
            parts.append((ranker, *self._top(corpus, index, query, allowed, c.depth)))
        positions, scores = fuse_arrays(
            parts,
            corpus.ranks,
            method=c.fusion,
            weights=c.weights,
            default_weight=c.default_weight,
            k=c.rrf_k,
            depth=c.depth,
        )
        return tuple(parts), positions, scores

    @staticmethod
    def _top(
        corpus: RankingCorpus, index: Index, query: SearchQuery, allowed: np.ndarray | None, depth: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """An index's answer as positions and scores (an index that answers only with
        ``ScoredTool``s, a third party's, is located by name)."""
        top = getattr(index, "top", None)
        if top is not None:
            return cast(ArrayIndex, index).top(query, allowed, depth)
        found = index.search(query, allowed, depth)
        position = corpus.position
        return (
            np.fromiter((position[s.name] for s in found), dtype=np.int64, count=len(found)),
            np.fromiter((s.score for s in found), dtype=np.float64, count=len(found)),
        )

    def finish(
        self,
        query: SearchQuery,
        candidates: Sequence[ToolDescriptor],
        rankings: Sequence[Ranking],
        prior: Prior | None = None,
    ) -> list[ScoredTool]:
        """Fuse all rankings in one level (this engine's composites unpacked), keep
        eligible candidates, boost by ``prior``, cut. No candidates: no results."""
        if not candidates:
            return []
        view = self.cache.view(candidates)
        cap = self.config.max_results
        limit = max(0, query.max_results if cap is None else min(query.max_results, cap))
        own = rankings[0] if len(rankings) == 1 and self.owns(rankings[0]) else None
        arrays = own.arrays if isinstance(own, CompositeRanking) else None
        if arrays is not None and arrays.owner is view.corpus:
            # this engine's own answer over this corpus: it is already the fusion, and
            # its arrays are filtered and cut before any ScoredTool is made
            return self._end(query, view, self._finish_arrays(query, view, arrays, prior, self._head(limit)), limit)
        if own is not None:
            fused = list(own.results)
        else:
            flat: list[Ranking] = []
            for r in rankings:
                flat.extend(r.parts if isinstance(r, CompositeRanking) and self.owns(r) else (r,))
            fused = self.fuse(flat)
        position, tools, allowed = view.corpus.position, view.corpus.tools, view.allowed
        eligible = [
            s
            for s in fused
            if (i := position.get(s.name)) is not None
            and (allowed is None or allowed[i])
            and (not query.required or passes_required(tools[i], query.required))
        ]
        if prior is not None:
            eligible = prior_boost(eligible, prior, self.config.prior_weight)
        return self._end(query, view, eligible, limit)

    def _head(self, limit: int) -> int:
        """How many fused results reach the end: ``limit``, or the rerank depth (at least
        ``limit``) when a cross-encoder re-scores them."""
        c = self.config
        return limit if c.rerank_model is None else max(limit, c.rerank_depth)

    def _end(self, query: SearchQuery, view: View, results: list[ScoredTool], limit: int) -> list[ScoredTool]:
        """The rerank stage (when ``rerank_model`` is set), then ``min_score_ratio`` and the cut."""
        c = self.config
        if c.rerank_model is not None and results and limit > 0:
            from greenroom_ranking.embeddings import embedding_text
            from greenroom_ranking.rerank import reranker

            tools, position = view.corpus.tools, view.corpus.position
            results = reranker(c.rerank_model, c.rerank_max_length).rerank(
                query.text, results, lambda name: embedding_text(tools[position[name]]), self._head(limit)
            )
        return cut(results, c.min_score_ratio, limit)

    def _finish_arrays(
        self, query: SearchQuery, view: View, arrays: RankedArrays, prior: Prior | None, limit: int
    ) -> list[ScoredTool]:
        """``finish`` of this engine's own fused arrays, before ``_end``: the best ``limit``,
        made for the few candidates that can reach them."""
        positions, scores = arrays.positions, arrays.scores
        if view.allowed is not None:
            keep = view.allowed[positions]
            positions, scores = positions[keep], scores[keep]
        if query.required:
            tools = view.corpus.tools
            keep = np.fromiter(
                (passes_required(tools[i], query.required) for i in positions.tolist()),
                dtype=bool,
                count=positions.size,
            )
            positions, scores = positions[keep], scores[keep]
        weight = self.config.prior_weight
        if prior is None or weight <= 0:
            # without a boost the order stands: only the first ``limit`` can be kept
            return scored(arrays.names, positions[:limit], scores[:limit])
        if 0 < limit < positions.size and scores[limit - 1] > 0:
            # a boost multiplies a score by at most 1 + weight; the ``limit`` best already
            # score at least the limit-th best score, so a candidate whose most boosted score
            # is below that cannot be among the results
            most = np.where(scores > 0, scores * (1.0 + weight), scores)
            keep = most >= scores[limit - 1]
            positions, scores = positions[keep], scores[keep]
        # ``prior_boost`` in arrays: each score times 1 + weight * p, p clamped to 0..1 (the
        # same float operations), re-sorted by score then name
        names = arrays.names
        boost = [max(0.0, min(1.0, prior(names[i]))) for i in positions.tolist()]
        boosted = scores * (1.0 + weight * np.asarray(boost, dtype=np.float64))
        order = np.lexsort((arrays.ranks[positions], -boosted))
        return scored(names, positions[order][:limit], boosted[order][:limit])

    def search(
        self,
        query: SearchQuery,
        candidates: Sequence[ToolDescriptor],
        prior: Prior | None = None,
        groups: Mapping[str, str] | None = None,
    ) -> list[ScoredTool]:
        """Rank and fuse with this engine alone (no other rankers), as the hooks would."""
        if query.mode != "keywords" or not candidates:
            return []
        return self.finish(query, candidates, [self.rank(query, candidates, groups)], prior)

    def fuse(self, rankings: Sequence[Ranking]) -> list[ScoredTool]:
        c = self.config
        return fuse(
            rankings, method=c.fusion, weights=c.weights, default_weight=c.default_weight, k=c.rrf_k, depth=c.depth
        )

    def owns(self, ranking: Ranking) -> bool:
        """Whether ``ranking`` is this engine's own composite answer."""
        return isinstance(ranking, CompositeRanking) and ranking.ranker == self.name
