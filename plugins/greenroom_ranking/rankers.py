"""The built-in rankers: keyword, bm25, bm25-plain and (with the extra) embedding.

Each ranker is a builder that turns a catalog into an ``Index``; ``BUILDERS`` names them
for the config's ``rankers`` list. The lexical ones live here, the embedding one in
``embeddings``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from greenroom import ScoredTool, SearchQuery, ToolDescriptor, normalize_term, top_band
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.index import Builder, Index, name_ranks, required_mask, top_scored
from greenroom_ranking.text import analyze, stemmer, stop_words, tool_document

# ----------------------------------------------------------------------------- keyword


class _Substrings:
    """Which tools' texts contain a substring.

    A query term never holds whitespace, so it is in a text exactly when it is in one of
    the text's whitespace-separated chunks. The index keeps each distinct chunk once
    (joined in one string, searched at C speed) with the tools it occurs in, so a term
    costs a scan of the catalog's vocabulary, not a loop over every tool's text.
    """

    def __init__(self, texts: Sequence[str]) -> None:
        postings: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            for chunk in dict.fromkeys(text.split()):
                postings.setdefault(chunk, []).append(i)
        self.size = len(texts)
        self.vocab = list(postings)
        self.blob = "\n".join(self.vocab) + "\n"
        lengths = [len(c) + 1 for c in self.vocab]
        self.starts = np.cumsum([0, *lengths[:-1]]).astype(np.int64) if lengths else np.zeros(0, np.int64)
        sizes = [len(p) for p in postings.values()]
        self.offsets = np.cumsum([0, *sizes]).astype(np.int64)
        flat = [i for p in postings.values() for i in p]
        self.postings = np.asarray(flat, dtype=np.int64)

    def chunks(self, term: str) -> np.ndarray:
        """Ids of the vocabulary chunks containing ``term``."""
        count = self.blob.count(term)
        if count == 0:
            return np.zeros(0, dtype=np.int64)
        if count > len(self.vocab) // 16:
            # a common term: one C-level containment test per chunk beats walking the hits
            return np.flatnonzero(np.fromiter((term in c for c in self.vocab), dtype=bool, count=len(self.vocab)))
        blob, find, hits = self.blob, self.blob.find, []
        i = find(term)
        while i >= 0:
            hits.append(i)
            i = find(term, blob.find("\n", i) + 1)  # next chunk: one hit per chunk is enough
        return np.searchsorted(self.starts, np.asarray(hits, dtype=np.int64), side="right") - 1

    def mask(self, term: str) -> np.ndarray:
        out = np.zeros(self.size, dtype=bool)
        if not term:
            return out
        ids = self.chunks(term)
        if ids.size:
            lo, hi = self.offsets[ids], self.offsets[ids + 1]
            lengths = hi - lo
            total = int(lengths.sum())
            # gather every posting range [lo, hi) at once
            index = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(total)
            out[self.postings[index]] = True
        return out


class KeywordIndex:
    """REFERENCE C keyword scoring, exactly as ``greenroom.search.keyword_scores``: +3
    per query term found in the name, else +1 if in the description, +100 when the whole
    query is the tool's name, only tools holding every ``+required`` term; then the top
    band at ``band`` of the best score (``greenroom.search.top_band``).

    It scores every tool at once from substring hits (a test checks it against
    ``keyword_scores``), so a query costs what its hits cost, not a loop over the
    catalog. With ``stop_words`` on, stop-word terms ("the", "of", "me") are ignored
    unless nothing else is left: in a whole sentence they match nearly every tool.
    """

    def __init__(self, tools: Sequence[ToolDescriptor], band: float = 0.5, stop_words: bool = True) -> None:
        self.names = [t.name for t in tools]
        self.ranks = name_ranks(self.names)
        lower = [n.lower() for n in self.names]
        self.name_text = _Substrings(lower)
        self.desc_text = _Substrings([t.description.lower() for t in tools])
        self.exact: dict[str, list[int]] = {}
        for i, n in enumerate(lower):
            self.exact.setdefault(n, []).append(i)
        self.band = band
        self.stop_words = stop_words
        self._hits: dict[str, tuple[np.ndarray, np.ndarray]] = {}

    def hits(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(name contains term, description contains term), cached per term."""
        got = self._hits.get(term)
        if got is None:
            if len(self._hits) > 4096:
                self._hits.clear()
            got = self._hits[term] = (self.name_text.mask(term), self.desc_text.mask(term))
        return got

    def terms(self, query: SearchQuery) -> tuple[str, ...]:
        if not self.stop_words:
            return query.terms
        stop = stop_words()
        kept = tuple(t for t in query.terms if t not in stop)
        return kept or query.terms

    def scores(self, query: SearchQuery, allowed: np.ndarray | None = None) -> np.ndarray:
        scores = np.zeros(len(self.names), dtype=np.float64)
        for term in self.terms(query):
            in_name, in_desc = self.hits(term)
            scores += 3.0 * in_name + (in_desc & ~in_name)
        whole = normalize_term(query.text.replace("+", " ").strip())
        if whole:
            for i in self.exact.get(whole, ()):
                scores[i] += 100.0
        keep = allowed
        for req in query.required:
            in_name, in_desc = self.hits(req)
            both = in_name | in_desc
            keep = both if keep is None else keep & both
        if keep is not None:
            scores = np.where(keep, scores, 0.0)
        return scores

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        # top_band only drops what falls below a floor set by the best score, so banding
        # the best ``depth`` is the same as banding everything and then cutting
        return top_band(top_scored(self.names, self.scores(query, allowed), depth, self.ranks), self.band)


def build_keyword(tools: Sequence[ToolDescriptor], config: RankingConfig) -> Index:
    return KeywordIndex(tools, config.keyword_band, config.keyword_stop_words)


# ----------------------------------------------------------------------------- bm25


@attrs.define
class BM25Index:
    """BM25 (bm25s) over analysed tool documents; queries go through the same analysis."""

    names: list[str]
    tools: Sequence[ToolDescriptor]
    retriever: Any
    stem: bool = True
    ranks: np.ndarray = attrs.field(init=False)

    def __attrs_post_init__(self) -> None:
        self.ranks = name_ranks(self.names)

    def query_tokens(self, text: str) -> list[str]:
        """The query analysed the way the documents were."""
        return analyze(text, stem=self.stem)

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        if self.retriever is None:  # an empty catalog
            return []
        tokens = list(dict.fromkeys(self.query_tokens(" ".join(query.terms))))
        ids = self.retriever.get_tokens_ids(tokens)
        if not ids:
            return []
        scores = self.retriever.get_scores_from_ids(ids)
        mask = required_mask(self.tools, query, allowed)
        if mask is not None:
            scores = np.where(mask, scores, 0.0)
        return top_scored(self.names, scores, depth, self.ranks)


def _bm25(docs: list[list[str]], k1: float, b: float) -> Any:
    if not docs:
        return None  # bm25s cannot index an empty corpus (it takes max() of its empty vocabulary)
    import bm25s

    retriever = bm25s.BM25(k1=k1, b=b)
    retriever.index(docs, show_progress=False)
    return retriever


def build_bm25(tools: Sequence[ToolDescriptor], config: RankingConfig) -> Index:
    docs = [
        analyze(tool_document(t, name_weight=config.name_weight, params=config.index_parameters)) or [""] for t in tools
    ]
    return BM25Index([t.name for t in tools], list(tools), _bm25(docs, config.bm25_k1, config.bm25_b))


@attrs.define
class PlainBM25Index(BM25Index):
    """The baseline: bm25s' own tokenizer (``\\b\\w\\w+\\b``, English stop words, Snowball
    stemmer) over ``name description``, names not split, parameters not indexed."""

    def query_tokens(self, text: str) -> list[str]:
        return _plain_tokens(text)


def _plain_tokens(text: str) -> list[str]:
    import bm25s

    out = bm25s.tokenize([text], stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
    return list(out[0]) if out else []


def build_plain_bm25(tools: Sequence[ToolDescriptor], config: RankingConfig) -> Index:
    import bm25s

    texts = [f"{t.name} {t.description}" for t in tools]
    docs = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
    docs = [list(d) or [""] for d in docs]
    return PlainBM25Index([t.name for t in tools], list(tools), _bm25(docs, config.bm25_k1, config.bm25_b))


def build_embedding(tools: Sequence[ToolDescriptor], config: RankingConfig) -> Index:
    # imported on first use: a runtime with lexical rankers only never pays for the
    # embedding module and what it loads (tens of ms at every start)
    from greenroom_ranking.embeddings import build_embedding as build

    return build(tools, config)


BUILDERS: dict[str, Builder] = {
    "keyword": build_keyword,
    "bm25": build_bm25,
    "bm25-plain": build_plain_bm25,
    "embedding": build_embedding,
}
