"""search-ranking: keyword, BM25 and (with the ``embeddings`` extra) embedding rankers for
ToolSearch, fused with any third-party ranker, boosted by learned usage priors, plus
``greenroom rank eval``.
"""

from greenroom_ranking.cache import CatalogCache
from greenroom_ranking.config import BUILTIN_RANKERS, DEFAULT_RANKERS, HYBRID_SETTINGS, RankingConfig
from greenroom_ranking.engine import RankingEngine
from greenroom_ranking.fusion import CompositeRanking, cut, fuse, prior_boost, rrf, weighted
from greenroom_ranking.plugin import SearchRankingPlugin

__all__ = [
    "BUILTIN_RANKERS",
    "DEFAULT_RANKERS",
    "HYBRID_SETTINGS",
    "CatalogCache",
    "CompositeRanking",
    "RankingConfig",
    "RankingEngine",
    "SearchRankingPlugin",
    "cut",
    "fuse",
    "prior_boost",
    "rrf",
    "weighted",
]
