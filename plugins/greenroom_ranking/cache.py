"""Where a search's candidates sit in a corpus, and every index built once per corpus.

A search's candidates (the tools still deferred) become a mask over a ``RankingCorpus``:

- the same sequence object as one of the last few searches (same length, same tools at
  a few probed places), or an equal list: that search's mask, at no cost per tool. The
  caller promises not to change a sequence in place once it has been searched;
- other candidates the corpus holds: located by object identity at C speed (a
  descriptor equal to the corpus's, but another object, is compared once);
- anything else (a group loaded, a description changed): a new corpus, the union of
  the old one and the new tools unless stale tools would make up more than half. The
  new tools are the searchable ones of the catalog the candidates come from, when the
  caller names it (a run's ``ctx.catalog()``; ``corpus.searchable``), else the
  candidates. A run's corpus, and so the key of its indexes on disk, is then the same
  whichever of its tools are deferred (one placed eager, one learned eager, one loaded),
  and is the one ``greenroom rank index`` builds ahead.

Corpora are shared by every engine in the process, by digest (``RankingCorpus.digest``), so a
second runtime over the same tools builds nothing. Each costly part of an index (see
``rankers.PARTS``) is read from the on-disk store (``store.IndexStore``) when another
process built it, and built and written there otherwise. ``builds`` and ``loads`` count
parts built here and parts read from disk.
"""

from __future__ import annotations

import functools
import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence
from itertools import repeat
from typing import Any

import attrs
import numpy as np

from greenroom import ToolDescriptor
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.corpus import CorpusText, RankingCorpus, searchable
from greenroom_ranking.index import Index
from greenroom_ranking.rankers import PARTS, RANKERS, Part
from greenroom_ranking.store import IndexStore

KEEP_CORPORA = 4
"""Corpora kept for sharing in one process (a runtime keeps its own alive regardless)."""

_SHARED: OrderedDict[str, RankingCorpus] = OrderedDict()
_SHARED_LOCK = threading.Lock()


def forget() -> None:
    """Drop the corpora this process shares between engines (the disk store stays)."""
    with _SHARED_LOCK:
        _SHARED.clear()


def _share(corpus: RankingCorpus) -> tuple[RankingCorpus, bool]:
    """``corpus``, holding the parts and indexes of the process's corpus with the same
    digest if there is one (whether there was), and shared from now on in its place.

    The same digest means the same tools, but a runtime built again holds other
    descriptor objects: were the known corpus handed out, the process would keep the
    descriptors of every runtime built before (100,000 at a time, scanned by every
    garbage collection from then on). Parts and indexes hold names and arrays, never
    descriptors, so they move to the new corpus and the old one goes with its runtime."""
    digest = corpus.digest
    with _SHARED_LOCK:
        known = _SHARED.pop(digest, None)
        if known is not None:
            with known.lock:
                corpus.parts.update(known.parts)
                corpus.indexes.update(known.indexes)
                if "ranks" in vars(known):  # computed already (a cached property): the same names
                    vars(corpus).setdefault("ranks", known.ranks)
        _SHARED[digest] = corpus
        while len(_SHARED) > KEEP_CORPORA:
            _SHARED.popitem(last=False)
        return corpus, known is not None


@functools.lru_cache(maxsize=1)
def _tooling() -> str:
    """What BM25 tables also depend on besides the config: bm25s, the stemmer, the stop words."""
    from importlib.metadata import PackageNotFoundError, version

    from greenroom_ranking.text import stop_words

    def ver(dist: str) -> str:
        try:
            return version(dist)
        except PackageNotFoundError:
            return "?"

    stop = hashlib.sha256("\n".join(sorted(stop_words())).encode()).hexdigest()[:12]
    return f"bm25s={ver('bm25s')},pystemmer={ver('PyStemmer')},stop={stop}"


@attrs.frozen
class View:
    """One search's candidates, located in a corpus."""

    corpus: RankingCorpus
    allowed: np.ndarray | None  # None: every corpus tool is a candidate


def _probe(candidates: Sequence[ToolDescriptor]) -> tuple[int, ...]:
    n = len(candidates)
    return (id(candidates[0]), id(candidates[n // 2]), id(candidates[-1])) if n else ()


@attrs.frozen
class _Seen:
    """A candidates sequence searched recently, what it held then, and its view."""

    sequence: Sequence[ToolDescriptor]
    held: list[ToolDescriptor]
    probe: tuple[int, ...]
    view: View


KEEP_VIEWS = 4
"""Candidate sequences remembered per engine (the deferred set, all tools, a few more)."""


class CorpusCache:
    """Candidates located in shared corpora, and their indexes (see the module doc)."""

    def __init__(self, config: RankingConfig, store: IndexStore | None = None, *, shared: bool = True) -> None:
        self.config = config
        self.store = store or IndexStore()
        self._sharing = shared  # False: corpora of its own (an evaluation timing real builds)
        self.builds: dict[str, int] = {}
        self.loads: dict[str, int] = {}
        self.build_seconds: dict[str, float] = {}
        self.shared = 0  # corpora another engine in this process had already made
        self._corpus: RankingCorpus | None = None
        self._ids: dict[int, int] = {}  # id of a descriptor equal to a corpus tool -> its position
        self._held: list[ToolDescriptor] = []  # keeps those descriptors (and so their ids) alive
        self._seen: list[_Seen] = []  # distinct candidate sets, most recent first
        self._copy: _Seen | None = None  # the last new list found equal to one of them
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ candidates
    def view(self, candidates: Sequence[ToolDescriptor], catalog: Sequence[ToolDescriptor] | None = None) -> View:
        """The candidates located in a corpus; ``catalog``, the tools they are drawn from
        (see the module doc)."""
        with self._lock:
            for seen in (*self._seen, self._copy):
                if (
                    seen is not None
                    and candidates is seen.sequence
                    and len(candidates) == len(seen.held)
                    and _probe(candidates) == seen.probe
                ):
                    return seen.view
            if isinstance(candidates, list):
                for seen in self._seen:
                    # a new list of the same tools (list equality compares identity first, at C speed)
                    if len(candidates) == len(seen.held) and candidates == seen.held:
                        self._copy = _Seen(candidates, seen.held, _probe(candidates), seen.view)
                        return seen.view
            corpus = self._corpus
            positions = self._positions(corpus, candidates) if corpus is not None else None
            if corpus is None or positions is None:
                corpus, positions = self._adopt(candidates, catalog)
            mask = np.zeros(len(corpus), dtype=np.bool_)
            mask[positions] = True
            view = View(corpus, None if mask.all() else mask)
            self._remember_sequence(candidates, view)
            return view

    def _remember_sequence(self, candidates: Sequence[ToolDescriptor], view: View) -> None:
        # ``held`` is what it held, should the caller mutate it after all
        seen = _Seen(candidates, list(candidates), _probe(candidates), view)
        self._seen = [seen, *(s for s in self._seen if s.sequence is not candidates)][:KEEP_VIEWS]

    def _positions(self, corpus: RankingCorpus, candidates: Sequence[ToolDescriptor]) -> np.ndarray | None:
        """Each candidate's corpus position, or None when one is not in the corpus."""
        get = self._ids.get
        positions = np.fromiter(map(get, map(id, candidates), repeat(-1)), dtype=np.int64, count=len(candidates))
        for j in np.flatnonzero(positions < 0).tolist():
            d = candidates[j]
            i = corpus.position.get(d.name)
            if i is None or corpus.tools[i] != d:
                return None
            positions[j] = i
            self._ids[id(d)] = i
            self._held.append(d)
        if len(self._held) > 2 * len(corpus) + 1024:  # new descriptor objects keep arriving
            self._ids = {id(t): i for i, t in enumerate(corpus.tools)}
            self._held = []
        return positions

    def _adopt(
        self, candidates: Sequence[ToolDescriptor], catalog: Sequence[ToolDescriptor] | None
    ) -> tuple[RankingCorpus, np.ndarray]:
        """A new corpus, of ``catalog``'s searchable tools when they hold every candidate,
        else of the candidates; and the candidates' positions in it."""
        if catalog is not None:
            corpus, _ = self._new_corpus(searchable(catalog))
            positions = self._positions(corpus, candidates)
            if positions is not None:
                return corpus, positions
        corpus, alone = self._new_corpus(candidates)
        # the candidates' own descriptors, duplicates of a name included (the last one
        # wins, as in the corpus), so the next search finds every one by identity; a
        # corpus made of the candidates alone, one per name, holds them all already
        if not (alone and len(corpus) == len(candidates)):
            for d in candidates:
                if id(d) not in self._ids:
                    self._ids[id(d)] = corpus.position[d.name]
                    self._held.append(d)
        positions = self._positions(corpus, candidates)
        assert positions is not None  # every candidate's id was just recorded
        return corpus, positions

    def _new_corpus(self, tools: Sequence[ToolDescriptor]) -> tuple[RankingCorpus, bool]:
        """A corpus of ``tools`` and the old corpus's others (unless those are more),
        shared with the process when it exists; and whether it was made of ``tools`` alone."""
        old = self._corpus
        merged: Sequence[ToolDescriptor] = tools  # the corpus keeps one per name itself
        if old is not None:
            by_name = {d.name: d for d in tools}
            keep = [t for t in old.tools if t.name not in by_name]
            if len(keep) <= len(by_name):
                merged = [*keep, *by_name.values()]
        corpus, known = _share(RankingCorpus(merged)) if self._sharing else (RankingCorpus(merged), False)
        self.shared += known
        self._corpus = corpus
        self._seen, self._copy = [], None  # their views are over the old corpus, which may now go
        self._ids = {id(t): i for i, t in enumerate(corpus.tools)}
        self._held = []
        return corpus, merged is tools

    # ------------------------------------------------------------------ indexes
    def index(self, corpus: RankingCorpus, ranker: str) -> Index:
        """The ranker's index over the corpus, made on first use from its parts."""
        spec = RANKERS.get(ranker)
        if spec is None:
            raise KeyError(f"unknown ranker {ranker!r}")
        key = (ranker, spec.settings(self.config))
        with corpus.lock:
            idx = corpus.indexes.get(key)
            if idx is None:
                parts = {p: self.part(corpus, p) for p in spec.parts}
                start = time.perf_counter()
                idx = spec.make(corpus, self.config, parts)
                if not spec.parts:  # made from scratch (the embedding ranker): a build
                    self._count(self.builds, ranker, time.perf_counter() - start)
                corpus.indexes[key] = idx
            return idx

    def text(self, corpus: RankingCorpus) -> CorpusText:
        """The corpus's text index (``+required`` filtering and the keyword ranker)."""
        text: CorpusText = self.part(corpus, "text")
        return text

    def part(self, corpus: RankingCorpus, name: str) -> Any:
        """A costly part over the corpus: from this process, else disk, else built (and
        written to disk for the next process)."""
        spec = PARTS[name]
        key = self._key(corpus, name)
        with corpus.lock:
            got = corpus.parts.get(key)
            if got is not None:
                return got
            if not self.config.index_cache:
                got = self._build(corpus, name, spec)
            else:
                got = self._read(corpus, key, name, spec)
                if got is None:
                    with self.store.building(key):
                        # another process may have written it while this one waited
                        got = self._read(corpus, key, name, spec)
                        if got is None:
                            got = self._build(corpus, name, spec)
                            self.store.save(key, got.to_arrays())
            corpus.parts[key] = got
            return got

    def _key(self, corpus: RankingCorpus, name: str) -> str:
        settings = PARTS[name].settings(self.config)
        return f"{name}:{corpus.digest}:{settings!r}" + ("" if name == "text" else f":{_tooling()}")

    def _read(self, corpus: RankingCorpus, key: str, name: str, spec: Part) -> Any:
        arrays = self.store.load(key)
        if arrays is None:
            return None
        try:
            got = spec.load(corpus, arrays)
        except Exception:  # damaged or from another version: rebuilt and overwritten, never an error
            return None
        self.loads[name] = self.loads.get(name, 0) + 1
        return got

    def _build(self, corpus: RankingCorpus, name: str, spec: Part) -> Any:
        start = time.perf_counter()
        got = spec.build(corpus, self.config)
        self._count(self.builds, name, time.perf_counter() - start)
        return got

    def _count(self, counter: dict[str, int], name: str, seconds: float) -> None:
        counter[name] = counter.get(name, 0) + 1
        self.build_seconds[name] = self.build_seconds.get(name, 0.0) + seconds
