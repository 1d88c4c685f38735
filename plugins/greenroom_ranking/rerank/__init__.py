"""The optional cross-encoder stage of a search: re-score the best fused results.

Off by default. With ``rerank_model`` set under ``[plugins.search-ranking]`` (a local
cross-encoder folder), each keyword search's best ``rerank_depth`` results are scored
again by the model, reading the query and each tool's text together, and returned in
its order. It costs a model forward pass per search (see docs/ranking.md), runs off the
event loop, and needs the ``rerank`` extra (no torch).
"""

from greenroom_ranking.rerank.stage import Reranker, reranker

__all__ = ["Reranker", "reranker"]
