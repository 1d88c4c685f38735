"""The ranking machinery the plugin's hooks and the evaluator share.

A ``RankingEngine`` runs the configured rankers over a catalog (indexes cached by
``CatalogCache``, in the process and on disk), fuses their rankings with any other
ranker's, keeps the eligible candidates, applies the usage-prior boost and cuts. It
knows nothing of hooks or runs: the plugin feeds it what a hook receives, ``greenroom
rank eval`` feeds it a dataset.

A search costs what its hits and its results cost: the candidates are a cached mask
(``CatalogCache.view``), ``+required`` terms narrow that mask once for every ranker, and
nothing after the rankers looks at more than their results.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from greenroom import Ranking, ScoredTool, SearchQuery, ToolDescriptor, passes_required
from greenroom_ranking.cache import CatalogCache
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.fusion import CompositeRanking, cut, fuse, prior_boost

Prior = Callable[[str], float]
"""A tool's learned use probability (``ToolPriors.get``)."""


class RankingEngine:
    """Configured rankers, fused with any other ranking, over cached indexes.

    ``name`` labels the composite ranking this engine answers with, so it can tell its
    own answer from a third-party ranker's when it fuses them. ``shared=False`` keeps its
    catalogs to itself instead of sharing them with the process's other engines.
    """

    def __init__(self, config: RankingConfig, name: str = "search-ranking", *, shared: bool = True) -> None:
        self.config = config
        self.name = name
        self.cache = CatalogCache(config, shared=shared)

    def prepare(self, candidates: Sequence[ToolDescriptor]) -> None:
        """Build every configured ranker's index for these candidates now (not at the
        first query); later calls with the same catalog are free."""
        view = self.cache.view(candidates)
        for ranker in self.config.rankers:
            self.cache.index(view.catalog, ranker)

    def rank(self, query: SearchQuery, candidates: Sequence[ToolDescriptor]) -> CompositeRanking:
        """Run the configured rankers; their fusion, with each one's ranking in ``parts``."""
        if not candidates:  # nothing to rank: no index is built (or rebuilt) for it
            return CompositeRanking(self.name, (), tuple(Ranking(r, ()) for r in self.config.rankers))
        view = self.cache.view(candidates)
        allowed = view.allowed
        if query.required:
            allowed = self.cache.text(view.catalog).required(query.required, allowed)
        depth = self.config.depth
        parts = tuple(
            Ranking(ranker, tuple(self.cache.index(view.catalog, ranker).search(query, allowed, depth)))
            for ranker in self.config.rankers
        )
        return CompositeRanking(self.name, tuple(self.fuse(parts)), parts)

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
        if len(rankings) == 1 and isinstance(rankings[0], CompositeRanking) and self.owns(rankings[0]):
            fused = list(rankings[0].results)  # this engine's own answer is already this fusion
        else:
            flat: list[Ranking] = []
            for r in rankings:
                flat.extend(r.parts if isinstance(r, CompositeRanking) and self.owns(r) else (r,))
            fused = self.fuse(flat)
        view = self.cache.view(candidates)
        position, tools, allowed = view.catalog.position, view.catalog.tools, view.allowed
        eligible = [
            s
            for s in fused
            if (i := position.get(s.name)) is not None
            and (allowed is None or allowed[i])
            and (not query.required or passes_required(tools[i], query.required))
        ]
        if prior is not None:
            eligible = prior_boost(eligible, prior, self.config.prior_weight)
        cap = self.config.max_results
        return cut(
            eligible, self.config.min_score_ratio, query.max_results if cap is None else min(query.max_results, cap)
        )

    def search(
        self, query: SearchQuery, candidates: Sequence[ToolDescriptor], prior: Prior | None = None
    ) -> list[ScoredTool]:
        """Rank and fuse with this engine alone (no other rankers), as the hooks would."""
        if query.mode != "keywords" or not candidates:
            return []
        return self.finish(query, candidates, [self.rank(query, candidates)], prior)

    def fuse(self, rankings: Sequence[Ranking]) -> list[ScoredTool]:
        c = self.config
        return fuse(
            rankings, method=c.fusion, weights=c.weights, default_weight=c.default_weight, k=c.rrf_k, depth=c.depth
        )

    def owns(self, ranking: Ranking) -> bool:
        """Whether ``ranking`` is this engine's own composite answer."""
        return isinstance(ranking, CompositeRanking) and ranking.ranker == self.name
