"""The corpus a generation of indexes is built over, its digest, and its searchable text.

A ``RankingCorpus`` is the set of tools the rankers index (not the agent's catalog of
tools, ``greenroom.Catalog``, though it is often made from it): it holds each tool once
(the last descriptor of a name wins, at the place of the first), with each name's rank
in sorted order, so ties are broken by name with no per-search sort of names. Its
``digest`` covers everything ranking reads (names, descriptions, parameter schemas, in
order): the key of its indexes in this process and on disk. ``CorpusText`` answers which
tools' names and descriptions contain a term, for the keyword ranker and for
``+required`` filtering.
"""

from __future__ import annotations

import functools
import hashlib
import threading
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from greenroom import ToolDescriptor
from greenroom.kit import descriptors_digest
from greenroom_ranking.substrings import SubstringIndex

DIGEST_VERSION = "greenroom-ranking-catalog-2"
"""Part of every digest: the key of indexes stored on disk (kept from before the class was
renamed, so stored indexes stay valid)."""


def corpus_digest(tools: Sequence[ToolDescriptor]) -> str:
    """A hash of every tool's name, description and parameter schema (and group and
    deferrable), in order: ``greenroom.kit.descriptors_digest``, which finds the tools of a
    catalog file by position without serialising their schemas."""
    return hashlib.sha256(f"{DIGEST_VERSION} {descriptors_digest(tools)}".encode("ascii")).hexdigest()


def searchable(catalog: Iterable[ToolDescriptor]) -> list[ToolDescriptor]:
    """The tools of a catalog a search can find: all but those never deferred, which are
    always in the model's list (the search tool itself). A run's corpus is made of these
    (``cache.CorpusCache.view``), and so is the one ``greenroom rank index`` builds."""
    return [d for d in catalog if d.deferrable != "never"]


class RankingCorpus:
    """The tools the rankers index, one per name, with the indexes built over them (see
    the module doc)."""

    def __init__(self, tools: Iterable[ToolDescriptor]) -> None:
        by_name = {t.name: t for t in tools}
        self.tools: tuple[ToolDescriptor, ...] = tuple(by_name.values())
        self.names: list[str] = list(by_name)
        self.position: dict[str, int] = dict(zip(self.names, range(len(self.names)), strict=True))
        self.parts: dict[str, Any] = {}  # costly structures, by part key
        self.indexes: dict[tuple[Any, ...], Any] = {}  # rankers' indexes, by ranker and settings
        self.lock = threading.RLock()

    def __len__(self) -> int:
        return len(self.tools)

    @functools.cached_property
    def digest(self) -> str:
        return corpus_digest(self.tools)

    @functools.cached_property
    def ranks(self) -> np.ndarray:
        """Each tool's position in name order (``greenroom.search.sort_scored``'s tie-break)."""
        # sorted by Python, not as a numpy string array: that would take 4 bytes for every
        # character of the longest name, for every name (20 MB at 100,000 tools)
        n = len(self.names)
        order = np.fromiter(sorted(range(n), key=self.names.__getitem__), dtype=np.int64, count=n)
        ranks = np.empty(n, dtype=np.int64)
        ranks[order] = np.arange(n)
        return ranks


class CorpusText:
    """Which tools' lowercase names and descriptions contain a term.

    Term hits are remembered (most queries share words with earlier ones), up to a bound
    on the ids held, so a long-lived process over a large corpus does not grow without
    limit.
    """

    HITS_LIMIT = 4_000_000
    """Tool ids remembered for term hits (int64: 32 MB)."""

    def __init__(self, names: Sequence[str], name_index: SubstringIndex, description_index: SubstringIndex) -> None:
        self.names = names
        self.name_index = name_index
        self.description_index = description_index
        self.size = name_index.size
        self._hits: dict[str, tuple[np.ndarray, np.ndarray]] = {}
        self._held = 0
        self._lock = threading.Lock()
        self._spaced: bool | None = None

    def spaced_names(self) -> bool:
        """Whether any name holds whitespace (asked once per corpus)."""
        if self._spaced is None:
            # one pass in C: whitespace inside the joined names (a leading or trailing
            # space of one name counts too, which only costs that corpus the lookup)
            self._spaced = len("x".join(self.names).split(maxsplit=1)) > 1
        return self._spaced

    @classmethod
    def build(cls, corpus: RankingCorpus) -> CorpusText:
        return cls(
            corpus.names,
            # one text at a time: the lowercase descriptions of 100,000 tools are never all held
            SubstringIndex.build(n.lower() for n in corpus.names),
            SubstringIndex.build(t.description.lower() for t in corpus.tools),
        )

    def to_arrays(self) -> dict[str, np.ndarray]:
        return {**self.name_index.to_arrays("name"), **self.description_index.to_arrays("description")}

    @classmethod
    def from_arrays(cls, corpus: RankingCorpus, arrays: Mapping[str, np.ndarray]) -> CorpusText:
        names = SubstringIndex.from_arrays(arrays, "name")
        descriptions = SubstringIndex.from_arrays(arrays, "description")
        if names.size != len(corpus) or descriptions.size != len(corpus):
            raise ValueError("stored text index is for another corpus size")
        return cls(corpus.names, names, descriptions)

    def hits(self, term: str) -> tuple[np.ndarray, np.ndarray]:
        """(ids of tools whose name contains ``term``, ids whose description does)."""
        got = self._hits.get(term)
        if got is None:
            got = (self.name_index.ids(term), self.description_index.ids(term))
            with self._lock:
                held = got[0].size + got[1].size
                if self._held + held > self.HITS_LIMIT:
                    self._hits.clear()
                    self._held = 0
                self._hits[term] = got
                self._held += held
        return got

    def contains(self, term: str) -> np.ndarray:
        """Mask of tools whose name or description contains ``term`` (``passes_required``)."""
        mask = np.zeros(self.size, dtype=bool)
        in_name, in_description = self.hits(term)
        mask[in_name] = True
        mask[in_description] = True
        return mask

    def required(self, terms: Sequence[str], allowed: np.ndarray | None) -> np.ndarray | None:
        """``allowed`` narrowed to tools holding every term (None: every tool, no terms)."""
        for term in terms:
            has = self.contains(term)
            allowed = has if allowed is None else allowed & has
        return allowed

    def exact(self, text: str) -> list[int]:
        """Positions of tools whose lowercase name is ``text``."""
        pieces = text.split()
        if not pieces:
            return []
        chunk = self.name_index.exact_chunk(pieces[0])
        if chunk is None:
            return []
        return [i for i in self.name_index.postings_of(chunk).tolist() if self.names[i].lower() == text]
