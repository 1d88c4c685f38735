"""Server-then-tool routing: rank a catalog's groups (MCP servers, catalog groups), then
the tools within the best groups.

A group's document is its name, its description (when the runtime knows one: an MCP
server's, a catalog group's) and its tools' names and descriptions, as BM25F fields
(``fields.weighted_postings``), so a query that names what a server is about finds the
server even when no single tool's text says it. The ``routing`` ranker answers with the
tools of the ``routing_groups`` best groups, each scored by its group's share of the best
group score times (``FLOOR`` plus the rest times its own BM25 score's share of the best):
tools within the best groups, in their own order. Fused with the flat rankings (``weights["routing"]``), it lifts the
tools of the right server without dropping any other tool. Tools with no group get no
routing score.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import numpy as np

from greenroom import ScoredTool, SearchQuery
from greenroom_ranking.analysis.fields import weighted_postings
from greenroom_ranking.index import scored, top_positions
from greenroom_ranking.text import analyze_documents, split_identifier

if TYPE_CHECKING:
    from greenroom_ranking.corpus import RankingCorpus
    from greenroom_ranking.rankers import BM25Index

GROUP_FIELD_WEIGHTS = (2.0, 1.0, 0.5)
"""A group document's fields: its name, its description, its tools' names and descriptions."""

FLOOR = 0.2
"""The share of its group's score every tool of a best group gets, matched or not."""


class GroupTable:
    """BM25F over group documents."""

    def __init__(self, names: Sequence[str], documents: Sequence[Sequence[Sequence[str]]], k1: float, b: float) -> None:
        self.names = list(names)
        self.vocab, self.data, self.indices, self.indptr = weighted_postings(documents, GROUP_FIELD_WEIGHTS, k1, b)

    def scores(self, tokens: Sequence[str]) -> np.ndarray:
        out = np.zeros(len(self.names), dtype=np.float64)
        for t in tokens:
            i = self.vocab.get(t)
            if i is not None:
                start, end = self.indptr[i], self.indptr[i + 1]
                np.add.at(out, self.indices[start:end], self.data[start:end])
        return out


class RoutingIndex:
    """The ``routing`` ranker's index over a corpus (see the module doc)."""

    def __init__(
        self,
        corpus: RankingCorpus,
        tools: BM25Index,
        groups: int,
        k1: float,
        b: float,
        descriptions: Mapping[str, str] | None = None,
    ) -> None:
        self.corpus = corpus
        self.tools = tools
        self.groups = groups
        self.k1, self.b = k1, b
        self.descriptions = dict(descriptions or {})
        ids: dict[str, int] = {}
        of = np.full(len(corpus), -1, dtype=np.int64)
        members: list[list[int]] = []
        for i, tool in enumerate(corpus.tools):
            if tool.group:
                g = ids.setdefault(tool.group, len(ids))
                if g == len(members):
                    members.append([])
                members[g].append(i)
                of[i] = g
        self.group_of = of
        self.group_ids = ids
        self.members = [np.asarray(m, dtype=np.int64) for m in members]
        texts: list[str] = []
        for name in ids:
            texts.append(" ".join(split_identifier(name)))
            texts.append(self.descriptions.get(name, ""))
            texts.append(
                "\n".join(f"{corpus.tools[i].name}\n{corpus.tools[i].description}" for i in members[ids[name]])
            )
        flat = analyze_documents(texts, joined=True)  # as the bm25 fields are: queries are analysed alike
        self.table = GroupTable(list(ids), [flat[i : i + 3] for i in range(0, len(flat), 3)], k1, b)
        self._described: dict[frozenset[tuple[str, str]], RoutingIndex] = {}
        self._lock = threading.Lock()

    def described(self, descriptions: Mapping[str, str]) -> RoutingIndex:
        """This index with the runtime's group descriptions in the group documents (built
        once per set of descriptions; groups not in the corpus are ignored)."""
        relevant = frozenset((g, d) for g, d in descriptions.items() if d and g in self.group_ids)
        if not relevant or relevant == frozenset(self.descriptions.items()):
            return self
        with self._lock:
            got = self._described.get(relevant)
            if got is None:
                got = RoutingIndex(self.corpus, self.tools, self.groups, self.k1, self.b, dict(relevant))
                self._described.clear()  # descriptions change rarely: keep the latest only
                self._described[relevant] = got
            return got

    def group_scores(self, query: SearchQuery) -> np.ndarray:
        """Each group's score, the ``groups`` best kept and scaled to 0..1 (others 0)."""
        tokens = list(dict.fromkeys(self.tools.query_tokens(" ".join(query.terms))))
        scores = self.table.scores(tokens)
        if not scores.size or scores.max() <= 0:
            return scores
        if scores.size > self.groups:
            floor = np.partition(scores, scores.size - self.groups)[scores.size - self.groups]
            scores = np.where(scores >= floor, scores, 0.0)
        return scores / scores.max()

    def top(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> tuple[np.ndarray, np.ndarray]:
        groups = self.group_scores(query)
        if not groups.size or groups.max() <= 0:
            return np.zeros(0, np.int64), np.zeros(0, np.float64)
        best = np.flatnonzero(groups > 0)
        members = np.concatenate([self.members[g] for g in best.tolist()])
        if allowed is not None:
            members = members[allowed[members]]
        full = np.zeros(len(self.corpus), dtype=np.float64)
        # every tool of a best group scores its group's share, at least FLOOR of it, the
        # rest by its own BM25 score's share of the best: a group found by its description
        # offers its tools even when no tool's own text matches
        full[members] = FLOOR * groups[self.group_of[members]]
        positions, values = self.tools.top(query, allowed, len(members) or 1)
        inside = groups[np.maximum(self.group_of[positions], 0)] * (self.group_of[positions] >= 0)
        if values.size and values.max() > 0:
            full[positions] += (1.0 - FLOOR) * inside * values.astype(np.float64) / float(values.max())
        return top_positions(full, depth, self.corpus.ranks)

    def search(self, query: SearchQuery, allowed: np.ndarray | None, depth: int) -> list[ScoredTool]:
        return scored(self.corpus.names, *self.top(query, allowed, depth))
