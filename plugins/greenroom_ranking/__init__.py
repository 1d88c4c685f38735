"""search-ranking: keyword, BM25 and (with the ``embeddings`` extra) embedding rankers for
ToolSearch, fused with any third-party ranker, boosted by learned usage priors, plus
``greenroom rank eval``.

Names load on first use: the entry point imports this package at every CLI start, and
the ranking machinery (numpy, bm25s) is only needed once something is ranked.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from greenroom_ranking.cache import CorpusCache
    from greenroom_ranking.config import BUILTIN_RANKERS, DEFAULT_RANKERS, HYBRID_SETTINGS, RankingConfig
    from greenroom_ranking.engine import RankingEngine
    from greenroom_ranking.fusion import CompositeRanking, cut, fuse, prior_boost, rrf, weighted
    from greenroom_ranking.plugin import SearchRankingPlugin

_EXPORTS: dict[str, str] = {
    "BUILTIN_RANKERS": "greenroom_ranking.config",
    "DEFAULT_RANKERS": "greenroom_ranking.config",
    "HYBRID_SETTINGS": "greenroom_ranking.config",
    "RankingConfig": "greenroom_ranking.config",
    "CorpusCache": "greenroom_ranking.cache",
    "RankingEngine": "greenroom_ranking.engine",
    "CompositeRanking": "greenroom_ranking.fusion",
    "cut": "greenroom_ranking.fusion",
    "fuse": "greenroom_ranking.fusion",
    "prior_boost": "greenroom_ranking.fusion",
    "rrf": "greenroom_ranking.fusion",
    "weighted": "greenroom_ranking.fusion",
    "SearchRankingPlugin": "greenroom_ranking.plugin",
}

__all__ = [
    "BUILTIN_RANKERS",
    "DEFAULT_RANKERS",
    "HYBRID_SETTINGS",
    "CompositeRanking",
    "CorpusCache",
    "RankingConfig",
    "RankingEngine",
    "SearchRankingPlugin",
    "cut",
    "fuse",
    "prior_boost",
    "rrf",
    "weighted",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'greenroom_ranking' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
