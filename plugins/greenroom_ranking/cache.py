"""The per-catalog index cache: every ranker's index built once and reused.

Promoting a tool or hiding one changes only the candidates of a search, which become a
mask over the cached catalog; only a catalog that gains or changes tools (a group loads)
is rebuilt. ``CatalogCache`` owns that decision and counts builds.
"""

from __future__ import annotations

import operator
import threading
import time
from collections.abc import Sequence

import attrs
import numpy as np

from greenroom import ToolDescriptor
from greenroom_ranking.config import RankingConfig
from greenroom_ranking.index import Index
from greenroom_ranking.rankers import BUILDERS


@attrs.define
class Catalog:
    """The tools one generation of indexes was built over."""

    tools: tuple[ToolDescriptor, ...]
    position: dict[str, int]
    indexes: dict[str, Index] = attrs.field(factory=dict)


@attrs.define
class View:
    """One search's candidates, located in a catalog."""

    catalog: Catalog
    allowed: np.ndarray | None  # None: every catalog tool is a candidate
    by_name: dict[str, ToolDescriptor]


class CatalogCache:
    """Indexes built once per catalog and reused for every query over it or a subset.

    The catalog grows to the union of the candidate sets seen (so a subset, e.g. the
    tools still deferred, reuses it through a mask), and is rebuilt from the current
    candidates when a tool changes or when stale tools would make up more than half of it.
    ``builds`` counts index builds per ranker; ``build_seconds`` times them.
    """

    def __init__(self, config: RankingConfig) -> None:
        self.config = config
        self.builds: dict[str, int] = {}
        self.build_seconds: dict[str, float] = {}
        self._catalog: Catalog | None = None
        self._last: list[ToolDescriptor] | None = None
        self._last_view: View | None = None
        self._lock = threading.RLock()

    def view(self, candidates: Sequence[ToolDescriptor]) -> View:
        with self._lock:
            last = self._last
            if (
                last is not None
                and self._last_view is not None
                and len(last) == len(candidates)
                and all(map(operator.is_, last, candidates))
            ):
                return self._last_view
            view = self._locate(candidates)
            self._last, self._last_view = list(candidates), view
            return view

    def _locate(self, candidates: Sequence[ToolDescriptor]) -> View:
        by_name = {d.name: d for d in candidates}
        cat = self._catalog
        if cat is not None:
            pos = cat.position
            fits = all(
                (i := pos.get(d.name)) is not None and (cat.tools[i] is d or cat.tools[i] == d) for d in candidates
            )
            if fits:
                return View(cat, self._mask(cat, by_name), by_name)
            keep = [t for t in cat.tools if t.name not in by_name]
            merged = [*keep, *by_name.values()] if len(keep) <= len(by_name) else list(by_name.values())
        else:
            merged = list(by_name.values())
        cat = Catalog(tuple(merged), {t.name: i for i, t in enumerate(merged)})
        self._catalog = cat
        return View(cat, self._mask(cat, by_name), by_name)

    @staticmethod
    def _mask(cat: Catalog, by_name: dict[str, ToolDescriptor]) -> np.ndarray | None:
        if len(by_name) == len(cat.tools):
            return None
        mask = np.zeros(len(cat.tools), dtype=bool)
        mask[[cat.position[n] for n in by_name]] = True
        return mask

    def index(self, catalog: Catalog, ranker: str) -> Index:
        """The ranker's index over the catalog, built on first use."""
        with self._lock:
            idx = catalog.indexes.get(ranker)
            if idx is None:
                builder = BUILDERS.get(ranker)
                if builder is None:
                    raise KeyError(f"unknown ranker {ranker!r}")
                start = time.perf_counter()
                idx = builder(catalog.tools, self.config)
                self.build_seconds[ranker] = self.build_seconds.get(ranker, 0.0) + time.perf_counter() - start
                self.builds[ranker] = self.builds.get(ranker, 0) + 1
                catalog.indexes[ranker] = idx
            return idx
