"""Task files and the stream of sessions drawn from them.

A task file has the datasets' format, one task a line::

    {"query": "...", "gold": ["tool_a", "tool_b"], "id": "t-1", "check": "pkg.mod:fn"}

``id`` and ``check`` are optional. ``check`` names a callable that receives the
session's ``Transcript`` and returns whether the task was done, on top of the gold
tools being called with valid arguments (for tasks where what was passed matters).

Sessions repeat tasks the way an agent's work does: a pool of tasks is drawn from the
file, and each session takes one of them with Zipf-like weights (the r-th most common
task is 1/r^s as likely as the first), seeded, so learning has something to learn.
"""

from __future__ import annotations

import importlib
import json
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from greenroom.kit import read_regular_file

MAX_TASK_BYTES = 1_000_000
"""Longest task line read; a task is a request, not a document."""


class TaskFileError(ValueError):
    """A task file that cannot be read, with the file and line that are wrong."""


@attrs.frozen
class Call:
    """One call the session made to a real tool (a dispatched call already unwrapped)."""

    tool: str
    arguments: Mapping[str, Any]
    valid: bool


@attrs.frozen
class Transcript:
    """What a task's checker is given: the task, the calls and the final answer."""

    task: Task
    calls: tuple[Call, ...]
    answer: str


Checker = Callable[[Transcript], bool]


@attrs.frozen
class Task:
    query: str
    gold: tuple[str, ...]
    id: str
    check: str | None = None

    def checker(self) -> Checker | None:
        """The task's own checker, imported on first use."""
        return None if self.check is None else _import_checker(self.check)

    def succeeded(self, calls: Sequence[Call], answer: str) -> bool:
        """Every gold tool was called with valid arguments, and the checker (if any) agrees."""
        valid = {c.tool for c in calls if c.valid}
        if not set(self.gold) <= valid:
            return False
        check = self.checker()
        return True if check is None else bool(check(Transcript(self, tuple(calls), answer)))


_CHECKERS: dict[str, Checker] = {}


def _import_checker(spec: str) -> Checker:
    hit = _CHECKERS.get(spec)
    if hit is not None:
        return hit
    module, _, attr = spec.partition(":")
    fn = getattr(importlib.import_module(module), attr)
    if not callable(fn):
        raise TypeError(f"{spec} is not callable")
    _CHECKERS[spec] = fn
    return fn


def parse_task(data: Any, where: str, fallback_id: str) -> Task:
    if not isinstance(data, dict):
        raise TaskFileError(f"{where}: expected a JSON object, got {type(data).__name__}")
    query, gold = data.get("query"), data.get("gold")
    if not isinstance(query, str) or not query.strip():
        raise TaskFileError(f"{where}: query: expected a non-empty string")
    if not isinstance(gold, list) or not gold or not all(isinstance(g, str) and g for g in gold):
        raise TaskFileError(f"{where}: gold: expected a non-empty list of tool names")
    check = data.get("check")
    if check is not None and (not isinstance(check, str) or ":" not in check):
        raise TaskFileError(f"{where}: check: expected 'module:function', got {check!r}")
    task_id = data.get("id", fallback_id)
    return Task(query=query, gold=tuple(dict.fromkeys(gold)), id=str(task_id), check=check)


def load_tasks(path: str | Path, tools: set[str] | None = None) -> list[Task]:
    """Read a task file; ``tools`` (the names the config has) makes a gold tool that
    does not exist an error here rather than a task no arm can ever pass."""
    p = Path(path)
    try:
        raw = read_regular_file(p)  # a named pipe or a device is refused, never waited on
    except OSError as exc:
        raise TaskFileError(f"{p}: cannot read the task file ({exc.strerror or exc})") from None
    out: list[Task] = []
    seen: set[str] = set()
    for lineno, line in enumerate(raw.splitlines(), 1):
        where = f"{p}:{lineno}"
        if not line.strip():
            continue
        if len(line) > MAX_TASK_BYTES:
            raise TaskFileError(f"{where}: the line is longer than {MAX_TASK_BYTES:,} bytes")
        try:
            data = json.loads(line.decode("utf-8"))
        except UnicodeDecodeError as exc:
            raise TaskFileError(f"{where}: not UTF-8 text (byte {exc.start})") from None
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
        task = parse_task(data, where, fallback_id=f"line-{lineno}")
        if task.id in seen:
            raise TaskFileError(f"{where}: id {task.id!r} is used by an earlier task")
        seen.add(task.id)
        if tools is not None:
            unknown = [g for g in task.gold if g not in tools]
            if unknown:
                raise TaskFileError(f"{where}: gold: no tool named {', '.join(map(repr, unknown))} in the config")
        out.append(task)
    if not out:
        raise TaskFileError(f"{p}: no tasks in the file")
    return out


@attrs.frozen
class Mix:
    """How sessions draw tasks: ``pool`` distinct tasks, Zipf exponent ``zipf``, ``seed``."""

    sessions: int
    pool: int = 40
    zipf: float = 1.1
    seed: int = 7

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


def session_stream(tasks: Sequence[Task], mix: Mix) -> list[Task]:
    """The task of each session, in order: the same for every arm and every run."""
    rng = random.Random(mix.seed)
    pool = rng.sample(list(tasks), min(mix.pool, len(tasks)))  # also the popularity order
    weights = [1.0 / (rank**mix.zipf) for rank in range(1, len(pool) + 1)]
    return rng.choices(pool, weights=weights, k=mix.sessions)
