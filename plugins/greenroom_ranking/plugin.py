"""The ``search-ranking`` plugin: rank ToolSearch keyword queries and fuse every ranker.

Two hooks, one design:

- ``greenroom_rank_tools`` runs this plugin's configured rankers (keyword, bm25, bm25-plain,
  embedding) and answers with one ``CompositeRanking``: their fusion, carrying each ranker's own
  ranking in ``parts``. A single hookimpl can return only one ``Ranking``, and any other
  fuser a user installs can treat this answer as one ranker.
- ``greenroom_search_tools`` (firstresult) unpacks composites and fuses every ranking in
  one level: this plugin's rankers and any third-party ``greenroom_rank_tools``, each
  with its weight from ``weights`` (``default_weight`` for unlisted ones). Then it drops
  tools that are not candidates or miss a ``+required`` term, applies the usage-prior
  boost (``ctx.priors``), the top-band cutoff and the cap.

Only ``keywords`` queries are ranked; ``select:`` and browse queries belong to the caller.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import anyio.to_thread

from greenroom import RunContext, hookimpl
from greenroom.plugins import Plugin
from greenroom.search import Ranking, ScoredTool, SearchQuery, passes_required
from greenroom.tools import ToolDescriptor
from greenroom_ranking.config import RankingConfig, config_schema
from greenroom_ranking.fusion import CompositeRanking, cut, fuse, prior_boost
from greenroom_ranking.rankers import CatalogCache


class SearchRankingPlugin(Plugin):
    """Keyword and BM25 rankers, fused with third-party ones, with a usage-prior boost."""

    name = "search-ranking"
    config_class = RankingConfig

    def __init__(self, config: RankingConfig | None = None) -> None:
        super().__init__(config)
        self.config: RankingConfig
        self.cache = CatalogCache(self.config)
        self._limiter = anyio.CapacityLimiter(1)

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        return config_schema(super().config_schema())

    # ------------------------------------------------------------------ contributions
    @hookimpl
    def greenroom_cli_commands(self, app: Any) -> None:
        from greenroom_ranking.cli import rank_app

        app.add_typer(rank_app, name="rank")

    # ------------------------------------------------------------------ search hooks
    @hookimpl
    async def greenroom_rank_tools(
        self, ctx: RunContext | None, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> Ranking | None:
        if query.mode != "keywords" or not candidates:
            return None
        if "embedding" not in self.config.rankers:
            return self.rank(query, candidates)  # lexical: a few ms, not worth a thread hop
        # an embedding search runs a model forward pass (and, the first time, loads the
        # model and embeds the catalog): off the event loop, one search at a time
        return await anyio.to_thread.run_sync(self.rank, query, candidates, limiter=self._limiter)

    @hookimpl
    def greenroom_search_tools(
        self,
        ctx: RunContext | None,
        query: SearchQuery,
        candidates: Sequence[ToolDescriptor],
        rankings: Sequence[Ranking],
    ) -> list[ScoredTool] | None:
        if query.mode != "keywords":
            return None
        if not any(self._own(r) for r in rankings):
            rankings = [*rankings, self.rank(query, candidates)]
        prior = None
        if ctx is not None and self.config.prior_weight > 0:
            prior = ctx.priors.get
        return self.finish(query, candidates, rankings, prior)

    # ------------------------------------------------------------------ the work
    def prepare(self, candidates: Sequence[ToolDescriptor]) -> None:
        """Build every configured ranker's index for these candidates now (not at the
        first query); later calls with the same catalog are free."""
        view = self.cache.view(candidates)
        for name in self.config.rankers:
            self.cache.index(view.catalog, name)

    def rank(self, query: SearchQuery, candidates: Sequence[ToolDescriptor]) -> CompositeRanking:
        """Run the configured rankers; their fusion, with each one's ranking in ``parts``."""
        view = self.cache.view(candidates)
        depth = self.config.depth
        parts = tuple(
            Ranking(name, tuple(self.cache.index(view.catalog, name).search(query, view.allowed, depth)))
            for name in self.config.rankers
        )
        fused = self._fuse(parts)
        return CompositeRanking(self.name, tuple(fused), parts)

    def finish(
        self,
        query: SearchQuery,
        candidates: Sequence[ToolDescriptor],
        rankings: Sequence[Ranking],
        prior: Any = None,
    ) -> list[ScoredTool]:
        """Fuse all rankings in one level, keep eligible candidates, boost, cut."""
        flat: list[Ranking] = []
        for r in rankings:
            flat.extend(r.parts if isinstance(r, CompositeRanking) and self._own(r) else (r,))
        fused = self._fuse(flat)
        by_name = self.cache.view(candidates).by_name
        eligible = [
            s
            for s in fused
            if (d := by_name.get(s.name)) is not None and (not query.required or passes_required(d, query.required))
        ]
        if prior is not None:
            eligible = prior_boost(eligible, prior, self.config.prior_weight)
        limit = (
            query.max_results if self.config.max_results is None else min(query.max_results, self.config.max_results)
        )
        return cut(eligible, self.config.min_score_ratio, limit)

    def search(self, query: SearchQuery, candidates: Sequence[ToolDescriptor], ctx: Any = None) -> list[ScoredTool]:
        """Rank and fuse with this plugin alone (no other rankers), as the hooks would."""
        if query.mode != "keywords" or not candidates:
            return []
        prior = ctx.priors.get if ctx is not None and self.config.prior_weight > 0 else None
        return self.finish(query, candidates, [self.rank(query, candidates)], prior)

    def _fuse(self, rankings: Sequence[Ranking]) -> list[ScoredTool]:
        c = self.config
        return fuse(
            rankings, method=c.fusion, weights=c.weights, default_weight=c.default_weight, k=c.rrf_k, depth=c.depth
        )

    def _own(self, r: Ranking) -> bool:
        return isinstance(r, CompositeRanking) and r.ranker == self.name
