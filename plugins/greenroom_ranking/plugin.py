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
This module only wires hooks; the ranking itself is ``engine.RankingEngine``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import anyio
import anyio.to_thread

from greenroom import Plugin, Ranking, RunContext, ScoredTool, SearchQuery, ToolDescriptor, hookimpl
from greenroom_ranking.config import RankingConfig

if TYPE_CHECKING:
    from greenroom_ranking.engine import RankingEngine


class SearchRankingPlugin(Plugin):
    """Keyword and BM25 rankers, fused with third-party ones, with a usage-prior boost."""

    name = "search-ranking"
    config_class = RankingConfig
    nonblocking = True  # fusing rankings only computes; ranking itself is async (index builds off the loop)

    def __init__(self, config: RankingConfig | None = None) -> None:
        super().__init__(config)
        self.config: RankingConfig
        self._engine: RankingEngine | None = None
        self._limiter = anyio.CapacityLimiter(1)
        if self.config.rerank_model is not None:
            # the rerank stage runs a cross-encoder pass per result it re-scores (and loads
            # the model the first time) inside greenroom_search_tools: the host then runs
            # that plain hook in a worker thread, bounded by its timeout, off the event loop
            self.nonblocking = False  # type: ignore[misc]

    @property
    def engine(self) -> RankingEngine:
        """The ranking machinery, built at the first search: it brings numpy and bm25s,
        which every command that merely starts the plugin (``greenroom --help``) would
        otherwise pay for."""
        if self._engine is None:
            from greenroom_ranking.engine import RankingEngine

            self._engine = RankingEngine(self.config, self.name)
        return self._engine

    # ------------------------------------------------------------------ contributions
    @hookimpl
    def greenroom_cli_commands(self, app: Any) -> None:
        # imported here: the evaluation command's modules are not needed to run an agent
        from greenroom_ranking.cli.commands import rank_app

        app.add_typer(rank_app, name="rank")

    # ------------------------------------------------------------------ search hooks
    @hookimpl
    async def greenroom_rank_tools(
        self, ctx: RunContext | None, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> Ranking | None:
        if query.mode != "keywords" or not candidates:
            return None
        groups = self._group_descriptions(ctx)
        catalog = None if ctx is None else ctx.catalog()  # what is indexed: its searchable tools
        if "embedding" not in self.config.rankers:
            return self.engine.rank(query, candidates, groups, catalog)  # lexical: a few ms, not worth a thread hop
        # an embedding search runs a model forward pass (and, the first time, loads the
        # model and embeds the catalog): off the event loop, one search at a time
        return await anyio.to_thread.run_sync(
            self.engine.rank, query, candidates, groups, catalog, limiter=self._limiter
        )

    def _group_descriptions(self, ctx: RunContext | None) -> dict[str, str] | None:
        """The run's group (server) descriptions, by group id, for the routing ranker's
        group documents; None when no routing ranker runs or there is no run."""
        if ctx is None or "routing" not in self.config.rankers:
            return None
        return {g.id: g.description for g in ctx.groups.values() if g.description}

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
        if not candidates:  # an answer, not None: no other fuser needs to try
            return []
        if not any(self.engine.owns(r) for r in rankings):
            catalog = None if ctx is None else ctx.catalog()
            rankings = [*rankings, self.engine.rank(query, candidates, self._group_descriptions(ctx), catalog)]
        prior = ctx.priors.get if ctx is not None and self.config.prior_weight > 0 else None
        return self.engine.finish(query, candidates, rankings, prior)
