"""The priors document and the EWMA fold: pure functions, no I/O.

A stored priors document (one per agent, format ``greenroom.priors/2``)::

    {"format": "greenroom.priors/2", "sessions": 12, "updated": "2025-01-31T09:00:00Z",
     "tools": {"web_search": {"p": 0.41, "calls": 57, "last_used": "2025-01-31T09:00:00Z"}},
     "steps": 3.2, "sets": [{"tools": ["web_search"], "w": 0.35, "n": 6}],
     "failed": [{"query": "refund an order", "count": 2, "last": "...", "found": ["..."]}]}

``steps``, ``sets`` and ``failed`` are new in ``/2`` (``greenroom_priors.together``); a
``greenroom.priors/1`` document still loads, with none of them, and is written back as ``/2``.

At the end of each run the observed per-tool presence (share of steps in which the tool
was called) is folded in with ``p_new = (1 - l) * p_old + l * p_run`` where
``l = max(floor, 1 / (n + 1))`` and ``n`` is the number of sessions folded in so far.
"""

from __future__ import annotations

import copy
import datetime as dt
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from greenroom_priors import together

FORMAT = "greenroom.priors/2"
FORMATS = ("greenroom.priors/1", FORMAT)
"""The formats a document may have: every older one still loads."""
DEFAULT_FLOOR = 0.1


class DocumentError(ValueError):
    """A stored or imported priors document that does not have the expected shape."""


def smoothing(sessions: int, floor: float = DEFAULT_FLOOR) -> float:
    """The weight of the newest session: ``max(floor, 1 / (sessions + 1))``.

    With ``sessions`` = 0 the first session is taken as is; the weight then shrinks like
    a running mean until it reaches ``floor``, after which old sessions fade
    geometrically (the priors keep adapting instead of freezing).
    """
    if sessions < 0:
        raise ValueError("sessions must be >= 0")
    return max(floor, 1.0 / (sessions + 1))


def fold(
    p_old: Mapping[str, float],
    observed: Mapping[str, float],
    sessions: int,
    *,
    floor: float = DEFAULT_FLOOR,
    absent: Iterable[str] = (),
) -> dict[str, float]:
    """One session folded into the priors; returns a new mapping.

    ``observed`` maps each tool called in the session to its share of steps. A tool seen
    for the first time starts at its observed share (no made-up history). Tools not in
    ``observed`` keep their value, except those named in ``absent`` (tools that were
    available but never called), which fold in a share of 0.
    """
    lam = smoothing(sessions, floor)
    out = dict(p_old)
    for name, share in observed.items():
        share = _clamp(share)
        old = p_old.get(name)
        out[name] = share if old is None else _clamp((1.0 - lam) * old + lam * share)
    for name in absent:
        if name in out and name not in observed:
            out[name] = _clamp((1.0 - lam) * out[name])
    return out


def _clamp(x: float) -> float:
    if math.isnan(x):
        raise ValueError("a probability cannot be NaN")
    return min(1.0, max(0.0, float(x)))


@attrs.frozen
class Observation:
    """What one run tells about tool use.

    Args:
        presence: Per called tool, the share of the run's steps in which it was called.
        counts: Per called tool, how many times it was called.
        available: Tools the agent could have called; only used to decay known tools
            that were available but not called (``decay_unused``). None: no decay.
        steps: The run's model calls (0: not known).
        failed: The run's failed searches: (query, the tools it named).
    """

    presence: Mapping[str, float]
    counts: Mapping[str, int] = attrs.field(factory=dict)
    available: frozenset[str] | None = None
    steps: int = 0
    failed: Sequence[tuple[str, Sequence[str]]] = ()


def empty_document() -> dict[str, Any]:
    return {"format": FORMAT, "sessions": 0, "updated": None, "tools": {}, "steps": 0.0, "sets": [], "failed": []}


def check_document(doc: Any, where: str) -> dict[str, Any]:
    """Validate a document's shape; return a normalised deep copy. ``where`` names its
    origin in the error (store URL and agent, or the imported file)."""
    if not isinstance(doc, Mapping):
        raise DocumentError(f"{where}: expected a priors document (a JSON object), got {type(doc).__name__}")
    if doc.get("format") not in FORMATS:
        raise DocumentError(
            f"{where}: not a greenroom priors document (format {doc.get('format')!r}, expected {FORMAT!r})"
        )
    sessions = doc.get("sessions")
    if not isinstance(sessions, int) or isinstance(sessions, bool) or sessions < 0:
        raise DocumentError(f"{where}: 'sessions' must be an integer >= 0, got {sessions!r}")
    tools = doc.get("tools")
    if not isinstance(tools, Mapping):
        raise DocumentError(f"{where}: 'tools' must be an object")
    out_tools: dict[str, Any] = {}
    for name, entry in tools.items():
        if not isinstance(entry, Mapping):
            raise DocumentError(f"{where}: tools.{name} must be an object")
        p = entry.get("p")
        if isinstance(p, bool) or not isinstance(p, int | float) or not 0.0 <= p <= 1.0:
            raise DocumentError(f"{where}: tools.{name}.p must be a number in [0, 1], got {p!r}")
        calls = entry.get("calls", 0)
        if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
            raise DocumentError(f"{where}: tools.{name}.calls must be an integer >= 0, got {calls!r}")
        last = entry.get("last_used")
        if last is not None and not isinstance(last, str):
            raise DocumentError(f"{where}: tools.{name}.last_used must be a timestamp string or null")
        out_tools[str(name)] = {"p": float(p), "calls": calls, "last_used": last}
    updated = doc.get("updated")
    try:
        steps = together.check_steps(doc.get("steps", 0.0))
        sets = together.check_sets(doc.get("sets", []))
        failed = together.check_failed(doc.get("failed", []))
    except together.ShapeError as exc:
        raise DocumentError(f"{where}: {exc}") from None
    return {
        "format": FORMAT,
        "sessions": sessions,
        "updated": updated if isinstance(updated, str) else None,
        "tools": out_tools,
        "steps": steps,
        "sets": sets,
        "failed": failed,
    }


def fold_document(
    current: Mapping[str, Any] | None,
    observation: Observation,
    *,
    now: str,
    floor: float = DEFAULT_FLOOR,
    where: str = "priors",
) -> dict[str, Any]:
    """The document after one more session; ``current`` None means no history.

    Pure, so a store may call it again after a retry. ``now`` is the timestamp recorded as
    ``updated`` and as ``last_used`` of every tool called.
    """
    doc = check_document(current, where) if current is not None else empty_document()
    lam = smoothing(doc["sessions"], floor)
    tools: dict[str, Any] = copy.deepcopy(doc["tools"])
    absent: Iterable[str] = ()
    if observation.available is not None:
        absent = [n for n in tools if n in observation.available and n not in observation.presence]
    p = fold({n: e["p"] for n, e in tools.items()}, observation.presence, doc["sessions"], floor=floor, absent=absent)
    for name, value in p.items():
        entry = tools.setdefault(name, {"p": value, "calls": 0, "last_used": None})
        entry["p"] = value
    for name in observation.presence:
        tools[name]["calls"] += int(observation.counts.get(name, 0))
        tools[name]["last_used"] = now
    return {
        "format": FORMAT,
        "sessions": doc["sessions"] + 1,
        "updated": now,
        "tools": tools,
        "steps": together.fold_steps(doc["steps"], observation.steps, lam),
        "sets": together.fold_sets(doc["sets"], observation.presence, lam),
        "failed": together.fold_failed(doc["failed"], observation.failed, now),
    }


def utc_now() -> str:
    """A timestamp as documents record it (``updated``, ``last_used``): UTC, seconds, ``Z``."""
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z")


def probabilities(doc: Mapping[str, Any]) -> dict[str, float]:
    """``{tool: p}`` of a checked document."""
    return {name: entry["p"] for name, entry in doc["tools"].items()}
