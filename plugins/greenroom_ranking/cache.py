"""Where a search's candidates sit in a catalog, and every index built once per catalog.

A search's candidates (the tools still deferred) become a mask over a ``Catalog``:

- the same sequence object as one of the last few searches (same length, same tools at
  a few probed places), or an equal list: that search's mask, at no cost per tool. The
  caller promises not to change a sequence in place once it has been searched;
- other candidates the catalog holds: located by object identity at C speed (a
  descriptor equal to the catalog's, but another object, is compared once);
- anything else (a group loaded, a description changed): a new catalog, the union of
  the old one and the candidates unless stale tools would make up more than half.

Catalogs are shared by every engine in the process, by digest (``Catalog.digest``), so a
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
from greenroom_ranking.catalog import Catalog, CatalogText
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.index import Index
from greenroom_ranking.rankers import PARTS, RANKERS, Part
from greenroom_ranking.store import IndexStore

KEEP_CATALOGS = 4
"""Catalogs kept for sharing in one process (a runtime keeps its own alive regardless)."""

_SHARED: OrderedDict[str, Catalog] = OrderedDict()
_SHARED_LOCK = threading.Lock()


def forget() -> None:
    """Drop the catalogs this process shares between engines (the disk store stays)."""
    with _SHARED_LOCK:
        _SHARED.clear()


def _share(catalog: Catalog) -> tuple[Catalog, bool]:
    """The process's catalog with this digest (registering this one if none); whether it
    was already there."""
    digest = catalog.digest
    with _SHARED_LOCK:
        known = _SHARED.get(digest)
        if known is not None:
            _SHARED.move_to_end(digest)
            return known, True
        _SHARED[digest] = catalog
        while len(_SHARED) > KEEP_CATALOGS:
            _SHARED.popitem(last=False)
        return catalog, False


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
    """One search's candidates, located in a catalog."""

    catalog: Catalog
    allowed: np.ndarray | None  # None: every catalog tool is a candidate


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


class CatalogCache:
    """Candidates located in shared catalogs, and their indexes (see the module doc)."""

    def __init__(self, config: RankingConfig, store: IndexStore | None = None, *, shared: bool = True) -> None:
        self.config = config
        self.store = store or IndexStore()
        self._sharing = shared  # False: catalogs of its own (an evaluation timing real builds)
        self.builds: dict[str, int] = {}
        self.loads: dict[str, int] = {}
        self.build_seconds: dict[str, float] = {}
        self.shared = 0  # catalogs another engine in this process had already made
        self._catalog: Catalog | None = None
        self._ids: dict[int, int] = {}  # id of a descriptor equal to a catalog tool -> its position
        self._held: list[ToolDescriptor] = []  # keeps those descriptors (and so their ids) alive
        self._seen: list[_Seen] = []  # distinct candidate sets, most recent first
        self._copy: _Seen | None = None  # the last new list found equal to one of them
        self._lock = threading.RLock()

    # ------------------------------------------------------------------ candidates
    def view(self, candidates: Sequence[ToolDescriptor]) -> View:
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
            cat = self._catalog
            positions = self._positions(cat, candidates) if cat is not None else None
            if cat is None or positions is None:
                cat = self._adopt(candidates)
                positions = self._positions(cat, candidates)
                assert positions is not None  # every candidate's id was just recorded
            mask = np.zeros(len(cat), dtype=np.bool_)
            mask[positions] = True
            view = View(cat, None if mask.all() else mask)
            self._remember_sequence(candidates, view)
            return view

    def _remember_sequence(self, candidates: Sequence[ToolDescriptor], view: View) -> None:
        # ``held`` is what it held, should the caller mutate it after all
        seen = _Seen(candidates, list(candidates), _probe(candidates), view)
        self._seen = [seen, *(s for s in self._seen if s.sequence is not candidates)][:KEEP_VIEWS]

    def _positions(self, cat: Catalog, candidates: Sequence[ToolDescriptor]) -> np.ndarray | None:
        """Each candidate's catalog position, or None when one is not in the catalog."""
        get = self._ids.get
        positions = np.fromiter(map(get, map(id, candidates), repeat(-1)), dtype=np.int64, count=len(candidates))
        for j in np.flatnonzero(positions < 0).tolist():
            d = candidates[j]
            i = cat.position.get(d.name)
            if i is None or cat.tools[i] != d:
                return None
            positions[j] = i
            self._ids[id(d)] = i
            self._held.append(d)
        if len(self._held) > 2 * len(cat) + 1024:  # new descriptor objects keep arriving
            self._ids = {id(t): i for i, t in enumerate(cat.tools)}
            self._held = []
        return positions

    def _adopt(self, candidates: Sequence[ToolDescriptor]) -> Catalog:
        """A catalog holding every candidate, shared with the process when it exists."""
        by_name = {d.name: d for d in candidates}
        old = self._catalog
        merged: list[ToolDescriptor] = list(by_name.values())
        if old is not None:
            keep = [t for t in old.tools if t.name not in by_name]
            if len(keep) <= len(by_name):
                merged = [*keep, *merged]
        cat, known = _share(Catalog(merged)) if self._sharing else (Catalog(merged), False)
        self.shared += known
        self._catalog = cat
        self._seen, self._copy = [], None  # their views are over the old catalog, which may now go
        self._ids = {id(t): i for i, t in enumerate(cat.tools)}
        self._held = []
        # the candidates' own descriptors, duplicates of a name included (the last one
        # wins, as in the catalog), so the next search finds every one by identity
        for d in candidates:
            if id(d) not in self._ids:
                self._ids[id(d)] = cat.position[d.name]
                self._held.append(d)
        return cat

    # ------------------------------------------------------------------ indexes
    def index(self, catalog: Catalog, ranker: str) -> Index:
        """The ranker's index over the catalog, made on first use from its parts."""
        spec = RANKERS.get(ranker)
        if spec is None:
            raise KeyError(f"unknown ranker {ranker!r}")
        key = (ranker, spec.settings(self.config))
        with catalog.lock:
            idx = catalog.indexes.get(key)
            if idx is None:
                parts = {p: self.part(catalog, p) for p in spec.parts}
                start = time.perf_counter()
                idx = spec.make(catalog, self.config, parts)
                if not spec.parts:  # made from scratch (the embedding ranker): a build
                    self._count(self.builds, ranker, time.perf_counter() - start)
                catalog.indexes[key] = idx
            return idx

    def text(self, catalog: Catalog) -> CatalogText:
        """The catalog's text index (``+required`` filtering and the keyword ranker)."""
        text: CatalogText = self.part(catalog, "text")
        return text

    def part(self, catalog: Catalog, name: str) -> Any:
        """A costly part over the catalog: from this process, else disk, else built (and
        written to disk for the next process)."""
        spec = PARTS[name]
        settings = spec.settings(self.config)
        key = f"{name}:{catalog.digest}:{settings!r}" + ("" if name == "text" else f":{_tooling()}")
        with catalog.lock:
            got = catalog.parts.get(key)
            if got is not None:
                return got
            if not self.config.index_cache:
                got = self._build(catalog, name, spec)
            else:
                got = self._read(catalog, key, name, spec)
                if got is None:
                    with self.store.building(key):
                        # another process may have written it while this one waited
                        got = self._read(catalog, key, name, spec)
                        if got is None:
                            got = self._build(catalog, name, spec)
                            self.store.save(key, got.to_arrays())
            catalog.parts[key] = got
            return got

    def _read(self, catalog: Catalog, key: str, name: str, spec: Part) -> Any:
        arrays = self.store.load(key)
        if arrays is None:
            return None
        try:
            got = spec.load(catalog, arrays)
        except Exception:  # damaged or from another version: rebuilt and overwritten, never an error
            return None
        self.loads[name] = self.loads.get(name, 0) + 1
        return got

    def _build(self, catalog: Catalog, name: str, spec: Part) -> Any:
        start = time.perf_counter()
        got = spec.build(catalog, self.config)
        self._count(self.builds, name, time.perf_counter() - start)
        return got

    def _count(self, counter: dict[str, int], name: str, seconds: float) -> None:
        counter[name] = counter.get(name, 0) + 1
        self.build_seconds[name] = self.build_seconds.get(name, 0.0) + seconds
