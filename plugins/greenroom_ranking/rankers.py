"""The built-in rankers: keyword, bm25, bm25-plain and (with the extra) embedding.

A ranker's index is made from *parts*, the structures that are costly to build: the
corpus's text index (``text``) and BM25 tables (``bm25``, ``bm25-plain``). Parts are
plain arrays, so ``CorpusCache`` keeps them per corpus in the process and on disk;
``RANKERS`` says which parts each ranker needs and how its index is made from them.
``BUILDERS`` builds an index directly, with no cache. The embedding ranker lives in
``embeddings`` (it keeps its own on-disk matrix).
"""

from __future__ import annotations

import functools
import math
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from greenroom import ScoredTool, SearchQuery, ToolDescriptor
from greenroom.kit import normalize_term
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.corpus import CorpusText, RankingCorpus
from greenroom_ranking.index import Index, scored, top_positions
from greenroom_ranking.text import analyze, analyze_documents, stemmer, stop_words, tool_document

# ----------------------------------------------------------------------------- keyword


Adds = tuple[np.ndarray, np.ndarray]
"""What a term adds to scores: tool ids (each once) and the amount for each."""

_NO_ADDS: Adds = (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int8))


class KeywordIndex:
    """REFERENCE C keyword scoring, exactly as ``greenroom.search.keyword_scores``: +3
    per query term found in the name, else +1 if in the description, +100 when the whole
    query is the tool's name, only tools holding every ``+required`` term; then the top
    band at ``band`` of the best score (``greenroom.search.top_band``).

    It scores from the substring indexes' hits, all terms in one pass (a test checks it
    against ``keyword_scores``), so a query costs what its hits cost, not a loop over the
    corpus. With ``stop_words`` on, stop-word terms ("the", "of", "me") are ignored
    unless nothing else is left: in a whole sentence they match nearly every tool.
    """

    HITS_LIMIT = 2_000_000
    """Tool ids remembered for terms (with their amounts: 18 MB)."""

    def __init__(self, corpus: RankingCorpus, text: CorpusText, band: float = 0.5, stop_words: bool = True) -> None:
        self.text = text
        self.names = corpus.names
        self.ranks = corpus.ranks
        self.band = band
        self.stop_words = stop_words
        # term -> what it adds to which tools: most queries share words with earlier
        # ones, and the new ones are looked up together
        self._adds: dict[str, Adds] = {}
        self._held = 0
        self._lock = threading.Lock()

    def adds(self, terms: Sequence[str]) -> list[Adds]:
        """What each term adds to tools' scores: 3 to a tool whose name holds it, else 1 if
        its description does."""
        known = self._adds
        got = [known.get(t) for t in terms]
        if None not in got:  # the usual query after the first few: every term seen before
            return got  # type: ignore[return-value]
        new = [t for t in dict.fromkeys(terms) if t not in known]
        names = self.text.name_index.ids_many(new)
        descriptions = self.text.description_index.ids_many(new)
        found: dict[str, Adds] = {}
        for term, in_name, in_desc in zip(new, names, descriptions, strict=True):
            if in_name.size and in_desc.size:  # both ascend: keep the descriptions' other hits
                at = np.minimum(np.searchsorted(in_name, in_desc), in_name.size - 1)
                in_desc = in_desc[in_name[at] != in_desc]
            if not in_name.size and not in_desc.size:
                found[term] = _NO_ADDS
                continue
            amounts = np.empty(in_name.size + in_desc.size, dtype=np.int8)  # bincount adds them as floats
            amounts[: in_name.size] = 3
            amounts[in_name.size :] = 1
            found[term] = (np.concatenate([in_name, in_desc]), amounts)
        with self._lock:
            for term, adds in found.items():
                held = adds[0].size
                if self._held + held > self.HITS_LIMIT:  # a bound, for a long-lived process
                    known.clear()
                    self._held = 0
                known[term] = adds
                self._held += held
        return [found[t] if a is None else a for t, a in zip(terms, got, strict=True)]

    def terms(self, query: SearchQuery) -> tuple[str, ...]:
        if not self.stop_words:
            return query.terms
        stop = stop_words()
        kept = tuple(t for t in query.terms if t not in stop)
        return kept or query.terms

    def scores(self, query: SearchQuery, allowed: np.ndarray | None = None) -> np.ndarray:
        n = len(self.names)
        adds = self.adds(self.terms(query))  # a term twice adds twice
        if len(adds) == 1:
            scores = np.bincount(adds[0][0], weights=adds[0][1], minlength=n)
        elif adds:
            ids = np.concatenate([a[0] for a in adds])
            scores = np.bincount(ids, weights=np.concatenate([a[1] for a in adds]), minlength=n)
        else:
            scores = np.zeros(n, dtype=np.float64)
        # two words with word characters are the whole query's words too, spaced, and no
        # name holds a space in most corpora: skip normalising a long sentence then
        if len(query.terms) < 2 or self.text.spaced_names():
            whole = normalize_term(query.text.replace("+", " ").strip())
            if whole:
                for i in self.text.exact(whole):
                    scores[i] += 100.0
        keep = self.text.required(query.required, allowed)
        if keep is not None:
            scores[~keep] = 0.0
        return scores

    def top(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> tuple[np.ndarray, np.ndarray]:
        # top_band only drops what falls below a floor set by the best score, so banding
        # the best ``depth`` is the same as banding everything and then cutting
        positions, values = top_positions(self.scores(query, allowed), depth, self.ranks)
        if values.size and self.band > 0:
            best = float(values[0])
            floor = math.ceil(best * self.band) if best >= 1 else best * self.band  # as top_band
            kept = int(np.count_nonzero(values >= floor))  # a prefix: values descend
            positions, values = positions[:kept], values[:kept]
        return positions, values

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        return scored(self.names, *self.top(query, allowed, depth))


# ----------------------------------------------------------------------------- bm25


@attrs.define
class BM25Table:
    """bm25s' precomputed scores: token ``t`` (``vocab[token]``) adds ``data[k]`` to tool
    ``indices[k]`` for ``k`` in ``indptr[t]:indptr[t + 1]``. Scoring adds them exactly as
    bm25s does (float32, token by token), so rankings match bm25s' own."""

    vocab: dict[str, int]
    data: np.ndarray
    indices: np.ndarray
    indptr: np.ndarray
    size: int

    @classmethod
    def build(cls, docs: list[list[str]], k1: float, b: float) -> BM25Table:
        """The table of ``docs`` (each a list of tokens), which it uses up."""
        if not docs:  # bm25s cannot index an empty corpus (it takes max() of its empty vocabulary)
            return cls({}, np.zeros(0, np.float32), np.zeros(0, np.int32), np.zeros(1, np.int64), 0)
        import bm25s

        # the documents become token ids here, one at a time in place, so bm25s is given
        # ids and makes no second copy of the corpus (about 30 MB at 100,000 tools)
        ids: dict[str, int] = {}
        for i, doc in enumerate(docs):
            docs[i] = [ids.setdefault(t, len(ids)) for t in doc]  # type: ignore[misc]
        retriever = bm25s.BM25(k1=k1, b=b)
        retriever.index((docs, ids), show_progress=False)
        s = retriever.scores
        columns = len(s["indptr"]) - 1
        # bm25s adds an empty token after indexing, with no column: no query holds it
        vocab = {t: i for t, i in retriever.vocab_dict.items() if i < columns}
        return cls(vocab, s["data"], s["indices"], s["indptr"], int(s["num_docs"]))

    def scores(self, tokens: Sequence[str]) -> np.ndarray | None:
        """Each tool's score for these (distinct) tokens; None when none is indexed."""
        ids = [self.vocab[t] for t in tokens if t in self.vocab]
        if not ids:
            return None
        scores = np.zeros(self.size, dtype=np.float32)
        # every column at once, in token order: np.add.at adds each tool's entries in that
        # order, the same float32 sums as adding the columns one by one (as bm25s does)
        at = np.asarray(ids)
        starts, ends = self.indptr[at], self.indptr[at + 1]
        lengths = ends - starts
        entries = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        np.add.at(scores, self.indices[entries], self.data[entries])
        return scores

    def to_arrays(self) -> dict[str, np.ndarray]:
        tokens = "\n".join(self.vocab).encode("utf-8", "surrogatepass")  # tokens hold no whitespace
        return {
            "tokens": np.frombuffer(tokens, dtype=np.uint8),
            "token_ids": np.fromiter(self.vocab.values(), dtype=np.int64, count=len(self.vocab)),
            "data": self.data,
            "indices": self.indices,
            "indptr": self.indptr,
            "size": np.asarray([self.size], dtype=np.int64),
        }

    @classmethod
    def from_arrays(cls, corpus: RankingCorpus, arrays: Mapping[str, np.ndarray]) -> BM25Table:
        ids = arrays["token_ids"]
        text = arrays["tokens"].tobytes().decode("utf-8", "surrogatepass")
        tokens = text.split("\n") if len(ids) else []
        data, indices, indptr = arrays["data"], arrays["indices"], arrays["indptr"]
        size = int(arrays["size"][0])
        if size != len(corpus) or len(tokens) != len(ids) or len(data) != len(indices):
            raise ValueError("stored BM25 table does not fit the corpus")
        if len(indptr) < 1 or int(indptr[-1]) != len(data) or (len(ids) and int(ids.max()) >= len(indptr) - 1):
            raise ValueError("stored BM25 table is malformed")
        if len(indices) and (int(indices.min()) < 0 or int(indices.max()) >= size):
            raise ValueError("stored BM25 table points past the corpus")
        return cls(dict(zip(tokens, ids.tolist(), strict=True)), data, indices, indptr, size)


class BM25Index:
    """BM25 over analysed tool documents; queries go through the same analysis."""

    def __init__(self, corpus: RankingCorpus, table: BM25Table, joined: bool = False) -> None:
        self.names = corpus.names
        self.ranks = corpus.ranks
        self.table = table
        self.analysed = _analyzed_joined if joined else _analyzed_word

    def query_tokens(self, text: str) -> list[str]:
        """The query analysed the way the documents were (``analyze``), word by word:
        no analysed token spans whitespace, so the words' tokens in turn are the text's."""
        analysed = self.analysed
        return [token for word in text.split() for token in analysed(word)]

    def top(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> tuple[np.ndarray, np.ndarray]:
        scores = self.table.scores(list(dict.fromkeys(self.query_tokens(" ".join(query.terms)))))
        if scores is None:
            return np.zeros(0, np.int64), np.zeros(0, np.float32)
        if allowed is not None:
            scores[~allowed] = 0.0
        return top_positions(scores, depth, self.ranks)

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        return scored(self.names, *self.top(query, allowed, depth))


@functools.lru_cache(maxsize=65536)
def _analyzed_word(word: str) -> tuple[str, ...]:
    # queries share most of their words, and splitting and stemming one costs more than the scoring
    return tuple(analyze(word))


@functools.lru_cache(maxsize=65536)
def _analyzed_joined(word: str) -> tuple[str, ...]:
    return tuple(analyze(word, joined=True))


class PlainBM25Index(BM25Index):
    """The baseline: bm25s' own tokenizer (``\\b\\w\\w+\\b``, English stop words, Snowball
    stemmer) over ``name description``, names not split, parameters not indexed."""

    def query_tokens(self, text: str) -> list[str]:
        return _plain_tokens([text])[0]


def _plain_tokens(texts: list[str]) -> list[list[str]]:
    import bm25s

    out = bm25s.tokenize(texts, stopwords="en", stemmer=stemmer(), return_ids=False, show_progress=False)
    return [list(d) for d in out] if texts else []


def _bm25_table(corpus: RankingCorpus, config: RankingConfig) -> BM25Table:
    """The bm25 ranker's table: BM25F over fields (``analysis.fields``) or, with
    ``bm25_document = "flat"``, bm25s over one flat document."""
    if config.bm25_document == "flat":
        return BM25Table.build(_bm25_documents(corpus, config), config.bm25_k1, config.bm25_b)
    from greenroom_ranking.analysis.fields import field_weights, fielded_postings

    weights = field_weights(config.field_weights)
    size, (vocab, data, indices, indptr) = fielded_postings(
        corpus.tools, weights, config.bm25_k1, config.bm25_b, parameters=config.index_parameters
    )
    return BM25Table(vocab, data, indices, indptr, size)


def _joined(config: RankingConfig) -> bool:
    """Whether the bm25 table keeps split words whole too (``analyze_documents(joined=True)``)."""
    return config.bm25_document == "fields"


def _bm25_settings(c: RankingConfig) -> tuple[Any, ...]:
    if c.bm25_document == "flat":  # the key the flat table had before fields existed: its stored tables stay valid
        return (c.bm25_k1, c.bm25_b, c.name_weight, c.index_parameters)
    return (c.bm25_k1, c.bm25_b, c.index_parameters, "fields-2", tuple(sorted(c.field_weights.items())))


def _bm25_documents(corpus: RankingCorpus, config: RankingConfig) -> list[list[str]]:
    # one document at a time: the texts of 100,000 tools are never all held at once
    texts = (tool_document(t, name_weight=config.name_weight, params=config.index_parameters) for t in corpus.tools)
    return [d or [""] for d in analyze_documents(texts)]


def _plain_documents(corpus: RankingCorpus, config: RankingConfig) -> list[list[str]]:
    return [d or [""] for d in _plain_tokens([f"{t.name} {t.description}" for t in corpus.tools])]


# ----------------------------------------------------------------------------- registry


@attrs.frozen
class Part:
    """A costly structure of a corpus: what its build reads from the config (its cache
    key), how to build it, and how to read it back from stored arrays."""

    settings: Callable[[RankingConfig], tuple[Any, ...]]
    build: Callable[[RankingCorpus, RankingConfig], Any]
    load: Callable[[RankingCorpus, Mapping[str, np.ndarray]], Any]


def _table(
    documents: Callable[[RankingCorpus, RankingConfig], list[list[str]]],
) -> Callable[[RankingCorpus, RankingConfig], Any]:
    return lambda corpus, config: BM25Table.build(documents(corpus, config), config.bm25_k1, config.bm25_b)


PARTS: dict[str, Part] = {
    "text": Part(lambda c: (), lambda corpus, _c: CorpusText.build(corpus), CorpusText.from_arrays),
    "bm25": Part(_bm25_settings, _bm25_table, BM25Table.from_arrays),
    "bm25-plain": Part(lambda c: (c.bm25_k1, c.bm25_b), _table(_plain_documents), BM25Table.from_arrays),
}


@attrs.frozen
class Ranker:
    """The parts a ranker's index is made from, the settings it reads, and how it is made."""

    parts: tuple[str, ...]
    settings: Callable[[RankingConfig], tuple[Any, ...]]
    make: Callable[[RankingCorpus, RankingConfig, Mapping[str, Any]], Index]


def _embedding(corpus: RankingCorpus, config: RankingConfig, _parts: Mapping[str, Any]) -> Index:
    # imported on first use: a runtime with lexical rankers only never pays for the
    # embedding module and what it loads (tens of ms at every start)
    from greenroom_ranking.embeddings import build_embedding

    return build_embedding(corpus, config)


def _routing(corpus: RankingCorpus, config: RankingConfig, parts: Mapping[str, Any]) -> Index:
    from greenroom_ranking.analysis.routing import RoutingIndex

    tools = BM25Index(corpus, parts["bm25"], _joined(config))
    return RoutingIndex(corpus, tools, config.routing_groups, config.bm25_k1, config.bm25_b)


RANKERS: dict[str, Ranker] = {
    "keyword": Ranker(
        ("text",),
        lambda c: (c.keyword_band, c.keyword_stop_words),
        lambda cat, c, parts: KeywordIndex(cat, parts["text"], c.keyword_band, c.keyword_stop_words),
    ),
    "bm25": Ranker(("bm25",), PARTS["bm25"].settings, lambda cat, c, parts: BM25Index(cat, parts["bm25"], _joined(c))),
    "bm25-plain": Ranker(
        ("bm25-plain",), PARTS["bm25-plain"].settings, lambda cat, _c, p: PlainBM25Index(cat, p["bm25-plain"])
    ),
    "routing": Ranker(("bm25",), lambda c: (*_bm25_settings(c), c.routing_groups), _routing),
    "embedding": Ranker(
        (),
        lambda c: (c.embedding_model, c.embedding_parameters, c.embedding_min_similarity, c.embedding_cache),
        _embedding,
    ),
}


def build_index(ranker: str, tools: Sequence[ToolDescriptor], config: RankingConfig) -> Index:
    """The ranker's index over ``tools``, built now with no cache."""
    corpus = RankingCorpus(tools)
    spec = RANKERS[ranker]
    return spec.make(corpus, config, {p: PARTS[p].build(corpus, config) for p in spec.parts})


def _builder(ranker: str) -> Callable[[Sequence[ToolDescriptor], RankingConfig], Index]:
    return lambda tools, config: build_index(ranker, tools, config)


BUILDERS: dict[str, Callable[[Sequence[ToolDescriptor], RankingConfig], Index]] = {n: _builder(n) for n in RANKERS}
