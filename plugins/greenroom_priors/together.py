"""What a priors document keeps beyond each tool's own use (format ``greenroom.priors/2``):
which tools sessions use *together*, how long sessions are, and which searches failed.

- ``sets``: for each set of tools a recent session called (exactly those), the share of
  sessions that did, folded like ``p`` (``w_new = (1 - l) * w_old``, plus ``l`` for the
  session's own set), and how many sessions had it (``n``). deferred-tools chooses an
  eager set by how many sessions it covers (a session is covered when every tool it
  calls is sent), which per-tool shares cannot tell. At most ``MAX_SETS`` sets of at most
  ``MAX_SET_TOOLS`` tools are kept (the smallest shares go first): a session that calls
  more tools than that is one no eager set should be built for.
- ``steps``: the mean number of model calls per session (the same fold).
- ``failed``: the searches after which the agent called none of the tools they named,
  by query (case and spaces folded): how often, when last, what they named. At most
  ``MAX_FAILED`` (the least recent go first), for ``greenroom priors report``.

Pure functions, no I/O; a ``greenroom.priors/1`` document has none of these and reads as
empty ones.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

MAX_SETS = 32
MAX_SET_TOOLS = 16
MAX_FAILED = 50
MAX_FOUND = 5
MAX_QUERY = 200


class ShapeError(ValueError):
    """A part of a document that does not have the expected shape (the message names it)."""


def _number(value: Any, lo: float, hi: float | None = None) -> bool:
    ok = not isinstance(value, bool) and isinstance(value, int | float) and value >= lo
    return ok and (hi is None or value <= hi)


def _names(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(n, str) for n in value)


def check_sets(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise ShapeError("'sets' must be a list")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not _names(entry.get("tools")):
            raise ShapeError(f"sets[{i}] must be an object with 'tools', a list of names")
        if not _number(entry.get("w"), 0.0, 1.0):
            raise ShapeError(f"sets[{i}].w must be a number in [0, 1], got {entry.get('w')!r}")
        n = entry.get("n", 1)
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise ShapeError(f"sets[{i}].n must be an integer >= 1, got {n!r}")
        out.append({"tools": sorted(set(entry["tools"])), "w": float(entry["w"]), "n": n})
    return out


def check_failed(raw: Any) -> list[dict[str, Any]]:
    if not isinstance(raw, list):
        raise ShapeError("'failed' must be a list")
    out = []
    for i, entry in enumerate(raw):
        if not isinstance(entry, Mapping) or not isinstance(entry.get("query"), str):
            raise ShapeError(f"failed[{i}] must be an object with a 'query' string")
        count = entry.get("count", 1)
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ShapeError(f"failed[{i}].count must be an integer >= 1, got {count!r}")
        last = entry.get("last")
        if last is not None and not isinstance(last, str):
            raise ShapeError(f"failed[{i}].last must be a timestamp string or null")
        found = entry.get("found", [])
        if not _names(found):
            raise ShapeError(f"failed[{i}].found must be a list of names")
        out.append({"query": entry["query"], "count": count, "last": last, "found": list(found)})
    return out


def check_steps(raw: Any) -> float:
    if not _number(raw, 0.0):
        raise ShapeError(f"'steps' must be a number >= 0, got {raw!r}")
    return float(raw)


def fold_sets(sets: Sequence[Mapping[str, Any]], called: Iterable[str], lam: float) -> list[dict[str, Any]]:
    """The sets after one more session that called ``called`` (weight of the newest ``lam``)."""
    mine = sorted(set(called))
    out: list[dict[str, Any]] = []
    seen = False
    for entry in sets:
        w = (1.0 - lam) * entry["w"]
        n = entry["n"]
        if entry["tools"] == mine:
            w, n, seen = w + lam, n + 1, True
        out.append({"tools": list(entry["tools"]), "w": min(1.0, w), "n": n})
    if not seen and len(mine) <= MAX_SET_TOOLS:
        out.append({"tools": mine, "w": lam, "n": 1})
    out.sort(key=lambda e: (-e["w"], -e["n"], e["tools"]))
    return [e for e in out[:MAX_SETS] if e["w"] > 0.0]


def fold_steps(old: float, steps: int, lam: float) -> float:
    """The mean model calls per session after one more of ``steps`` (0: not known)."""
    if steps <= 0:
        return old
    return float(steps) if old <= 0.0 else (1.0 - lam) * old + lam * steps


def normal_query(query: str) -> str:
    """A query as failed searches are kept by: lower case, spaces folded, bounded."""
    return " ".join(query.lower().split())[:MAX_QUERY]


def fold_failed(
    failed: Sequence[Mapping[str, Any]], searches: Iterable[tuple[str, Sequence[str]]], now: str
) -> list[dict[str, Any]]:
    """The failed searches with one session's added (``(query, names it found)``)."""
    by_query = {e["query"]: dict(e) for e in failed}
    for query, found in searches:
        key = normal_query(query)
        if not key:
            continue
        entry = by_query.setdefault(key, {"query": key, "count": 0, "last": None, "found": []})
        entry["count"] += 1
        entry["last"] = now
        entry["found"] = list(found)[:MAX_FOUND]
    out = sorted(by_query.values(), key=lambda e: (e["last"] or "", e["count"], e["query"]), reverse=True)
    return out[:MAX_FAILED]


def usage_sets(doc: Mapping[str, Any]) -> dict[frozenset[str], float]:
    """``{set of tools: share of sessions}`` of a checked document (what ``ToolPriors.sets`` holds)."""
    return {frozenset(e["tools"]): e["w"] for e in doc.get("sets", ())}
