"""Tool search vocabulary: the query grammar, scored results, and the keyword ranker.

The tool-search query grammar (``select:a,b``, ``group:NAME``, ``+required words``, plain
keywords, empty = browse) is parsed here once, so every ranker sees the same ``SearchQuery``. The keyword
ranker is core's fallback; ranking plugins add better rankers and fusion through the
``greenroom_rank_tools`` / ``greenroom_search_tools`` hooks.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Mapping, Sequence, Set
from typing import Literal

import attrs

from greenroom.tools import ToolDescriptor

QueryMode = Literal["select", "keywords", "browse", "group"]

_PUNCT = re.compile(r"^[^\w]+|[^\w]+$")


def normalize_term(term: str) -> str:
    """Lowercase and strip punctuation from both ends (``"issue?"`` -> ``"issue"``)."""
    low = term.lower()
    # most words start and end with a word character (what ``\w`` matches: str.isalnum's
    # Unicode test, or the underscore): nothing to strip, no regex
    if low and (low[0].isalnum() or low[0] == "_") and (low[-1].isalnum() or low[-1] == "_"):
        return low
    return _PUNCT.sub("", low)


@attrs.frozen
class SearchQuery:
    """A parsed tool-search query."""

    text: str
    mode: QueryMode
    terms: tuple[str, ...] = ()
    required: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    max_results: int = 5

    @classmethod
    def parse(cls, text: str, max_results: int = 5) -> SearchQuery:
        raw = (text or "").strip()
        if raw.lower().startswith("group:"):  # the names of one group, without schemas
            return cls(raw, "group", names=(raw[len("group:") :].strip(),), max_results=max_results)
        if raw.lower().startswith("select:"):
            names = tuple(n.strip() for n in raw[len("select:") :].split(",") if n.strip())
            return cls(raw, "select", names=names, max_results=max(max_results, len(names)))
        words = raw.split()
        required: tuple[str, ...] = ()
        if "+" in raw:  # most queries hold no +required word
            required = tuple(t for t in (normalize_term(w[1:]) for w in words if w.startswith("+") and len(w) > 1) if t)
        terms = tuple(t for t in (normalize_term(w.lstrip("+")) for w in words) if t)
        if not terms:
            return cls(raw, "browse", max_results=max_results)
        return cls(raw, "keywords", terms=terms, required=required, max_results=max_results)


@attrs.frozen
class ScoredTool:
    name: str
    score: float


@attrs.frozen
class Ranking:
    """One ranker's answer: scored candidates, best first."""

    ranker: str
    results: tuple[ScoredTool, ...]


def tool_text(tool: ToolDescriptor) -> str:
    return f"{tool.name} {tool.description}".lower()


def passes_required(tool: ToolDescriptor, required: Sequence[str]) -> bool:
    text = tool_text(tool)
    return all(r in text for r in required)


def sort_scored(scored: list[ScoredTool]) -> list[ScoredTool]:
    """Best score first; ties broken by name so results never depend on chance."""
    return sorted(scored, key=lambda s: (-s.score, s.name))


def keyword_scores(query: SearchQuery, candidates: Sequence[ToolDescriptor]) -> list[ScoredTool]:
    """Keyword scoring: +3 per term in the name, else +1 if in the description; +100 when
    the whole query is a tool's name. Only tools containing every ``+required`` term."""
    whole = normalize_term(query.text.replace("+", " ").strip())
    out: list[ScoredTool] = []
    for tool in candidates:
        if query.required and not passes_required(tool, query.required):
            continue
        name = tool.name.lower()
        desc = tool.description.lower()
        score = 0.0
        for term in query.terms:
            if term in name:
                score += 3
            elif term in desc:
                score += 1
        if whole and whole == name:
            score += 100
        if score > 0:
            out.append(ScoredTool(tool.name, score))
    return sort_scored(out)


def top_band(scored: list[ScoredTool], ratio: float = 0.5) -> list[ScoredTool]:
    """Keep results scoring at least ``ceil(top * ratio)`` (everruns' half-of-top band)."""
    if not scored or ratio <= 0:
        return scored
    floor = math.ceil(scored[0].score * ratio) if scored[0].score >= 1 else scored[0].score * ratio
    return [s for s in scored if s.score >= floor]


def keyword_search(query: SearchQuery, candidates: Sequence[ToolDescriptor]) -> list[ScoredTool]:
    """Core's stand-alone search: keyword scores, top band, cap."""
    return top_band(keyword_scores(query, candidates))[: query.max_results]


def resolve_select(names: Sequence[str], available: Collection[str]) -> tuple[list[str], list[str]]:
    """Resolve ``select:`` names: exact first, then a unique ``__`` suffix match.

    ``available`` is best a set or a mapping (looked up, not copied); the suffix index is
    built only when a name is not found as it is.
    Returns (found names in the order asked, names that matched nothing or were ambiguous).
    """
    exact = available if isinstance(available, (Set, Mapping)) else set(available)
    by_suffix: dict[str, list[str]] | None = None
    found: list[str] = []
    missing: list[str] = []
    for name in names:
        if name in exact:
            hit = name
        else:
            if by_suffix is None:
                by_suffix = {}
                for known in exact:
                    if "__" in known:
                        by_suffix.setdefault(known.split("__", 1)[1], []).append(known)
            if len(by_suffix.get(name, [])) == 1:
                hit = by_suffix[name][0]
            else:
                missing.append(name)
                continue
        if hit not in found:
            found.append(hit)
    return found, missing
