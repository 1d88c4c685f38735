"""What an evaluation keeps: its settings (``eval.json``) and each finished session
(``sessions.jsonl``), appended at once so that an evaluation stopped half-way goes on
from where it was when run again with the same settings.

A session's line holds its figures and, per request, the task, whether it was done,
the searches' queries, the calls (tool, arguments, validity, result) and the answer.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from greenroom_lab.costing import Request
from greenroom_lab.eval.tasks import Call, Mix

RESULTS = "sessions.jsonl"
MANIFEST = "eval.json"


class EvalError(ValueError):
    """An evaluation that cannot run as asked (the message says what to change)."""


@attrs.frozen
class Settings:
    """What makes two evaluations comparable; a folder holds results of one of them."""

    arms: tuple[str, ...]
    mix: Mix
    agent: str
    price: str
    tasks_digest: str
    target: str
    left_out: tuple[str, ...] = ()
    """The ids of tasks left out because their gold tools cannot be called."""
    context_window: int | None = None
    """``--context-window`` as given (None: the model family's)."""

    def to_json(self) -> dict[str, Any]:
        return {
            **attrs.asdict(self, recurse=False),
            "arms": list(self.arms),
            "mix": self.mix.to_json(),
            "left_out": list(self.left_out),
        }


def request_trace(task: str, done: bool, queries: Sequence[str], calls: Sequence[Call], answer: str) -> dict[str, Any]:
    """One request of a session as ``sessions.jsonl`` keeps it."""
    return {
        "task": task,
        "done": done,
        "searches": list(queries),
        "calls": [
            {"tool": c.tool, "arguments": dict(c.arguments), "valid": c.valid}
            | {"result": c.result, "is_error": c.is_error}
            for c in calls
        ],
        "answer": answer,
    }


@attrs.frozen
class SessionResult:
    arm: str
    index: int
    task: str
    """The first request's task (``requests`` has every request's)."""
    success: bool
    """Every request of the session was done."""
    steps: int
    searches: int
    group_loads: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cost: float
    calls: int
    invalid_calls: int
    stop_reason: str
    error: str = ""
    """Why the session ended in an error (its model failed, a request was past the context
    window) or a task could not be judged (its checker failed), else empty."""
    tail: Request | None = None
    """The session's last request: where the next session's prompt cache starts from
    (kept so that a resumed evaluation bills the next session as an unbroken one would)."""
    seed: int = 0
    done: int = 0
    """Requests done."""
    asked: int = 1
    """Requests in the session (those after a model error are counted, not done)."""
    cost_no_cache: float = 0.0
    """The same session with every input token at the input price."""
    over_window: int = 0
    """Tokens of the request that was past the context window, else 0."""
    requests: tuple[Mapping[str, Any], ...] = ()
    """Per request: ``request_trace``."""

    def to_json(self) -> dict[str, Any]:
        data = attrs.asdict(self, recurse=False)
        data["tail"] = attrs.asdict(self.tail) if self.tail is not None else None
        data["requests"] = list(self.requests)
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionResult:
        values = {f.name: data[f.name] for f in attrs.fields(cls) if f.default is attrs.NOTHING}
        raw = data.get("tail")
        tail = None
        if isinstance(raw, dict):
            tail = Request(
                prefix_hash=str(raw["prefix_hash"]),
                prefix_tokens=int(raw["prefix_tokens"]),
                message_tokens=tuple(raw["message_tokens"]),
                message_ids=tuple(raw["message_ids"]),
                output_tokens=int(raw.get("output_tokens", 0)),
            )
        return cls(
            **values,
            error=str(data.get("error") or ""),
            tail=tail,
            seed=int(data["seed"]),
            done=int(data["done"]),
            asked=int(data["asked"]),
            cost_no_cache=float(data["cost_no_cache"]),
            over_window=int(data.get("over_window") or 0),
            requests=tuple(data.get("requests") or ()),
        )


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


class ResultsFile:
    """``sessions.jsonl`` and ``eval.json`` of an output folder."""

    def __init__(self, folder: Path, settings: Settings, *, fresh: bool) -> None:
        self.folder = folder
        self.path = folder / RESULTS
        self.done: dict[tuple[int, str, int], SessionResult] = {}
        folder.mkdir(parents=True, exist_ok=True)
        manifest = folder / MANIFEST
        if fresh:
            for stale in [self.path, *folder.glob("*.priors.sqlite3*")]:
                stale.unlink(missing_ok=True)
        elif manifest.exists() and self.path.exists():
            self._check_same(manifest, settings)
            self._load()
        manifest.write_text(json.dumps(settings.to_json(), indent=2) + "\n", encoding="utf-8")

    def _check_same(self, manifest: Path, settings: Settings) -> None:
        try:
            earlier = json.loads(manifest.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            earlier = {}
        now = settings.to_json()
        differ = [k for k in now if earlier.get(k) != now[k] and k != "arms"]
        if differ:
            raise EvalError(
                f"{self.folder} holds an evaluation with other settings ({', '.join(differ)} differ); "
                "run with --fresh to start over there, or choose another --out folder"
            )

    def _load(self) -> None:
        with self.path.open(encoding="utf-8") as fh:
            for line in fh:
                try:
                    result = SessionResult.from_json(json.loads(line))
                except (ValueError, KeyError, TypeError):
                    continue  # a line cut short when the last run was stopped: that session runs again
                self.done[(result.seed, result.arm, result.index)] = result

    def append(self, result: SessionResult) -> None:
        self.done[(result.seed, result.arm, result.index)] = result
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(result.to_json()) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def results(self, arm: str, seed: int) -> list[SessionResult]:
        return sorted((r for (s, a, _), r in self.done.items() if a == arm and s == seed), key=lambda r: r.index)
