"""Task files and the stream of sessions drawn from them.

A task file has the datasets' format, one task a line::

    {"query": "...", "gold": ["tool_a", "tool_b"], "id": "t-1", "check": "pkg.mod:fn"}

``id`` and ``check`` are optional. ``check`` names a callable that receives the
session's ``Transcript`` and returns whether the task was done, on top of the gold
tools being called with valid arguments (for tasks where what was passed matters).

Sessions repeat work the way an agent's does: a pool of units (tools, workflows or the
tasks themselves) is drawn from the file, and each request of a session takes one of
them with Zipf-like weights (the r-th most common unit is 1/r^s as likely as the
first), seeded, so learning has something to learn; a unit that comes back is worded
afresh (another task of the file that needs it) while the file has other wordings.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import attrs

from greenroom.kit import MAX_ARGUMENT_DEPTH, read_regular_file, text_nesting_exceeds

MAX_TASK_BYTES = 1_000_000
"""Longest task line read; a task is a request, not a document."""


class TaskFileError(ValueError):
    """A task file that cannot be read, with the file and line that are wrong."""


@attrs.frozen
class Call:
    """One call the session made to a real tool (a dispatched call already unwrapped), and
    what it answered (empty for a call refused for its arguments)."""

    tool: str
    arguments: Mapping[str, Any]
    valid: bool
    result: str = ""
    is_error: bool = False


@attrs.frozen
class Transcript:
    """What a task's checker is given: the task (one request of the session), the calls
    made for it with their results, and the final answer."""

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
    where: str = attrs.field(default="", eq=False)
    """``file:line`` of the task, for what is said about it."""


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
    return Task(query=query, gold=tuple(dict.fromkeys(gold)), id=str(task_id), check=check, where=where)


def load_tasks(path: str | Path) -> list[Task]:
    """Read a task file; a line that is not a task is an error naming the file and line."""
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
            text = line.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise TaskFileError(f"{where}: not UTF-8 text (byte {exc.start})") from None
        # json recurses once per level: a line nested thousands deep would end in a RecursionError
        if text_nesting_exceeds(text):
            raise TaskFileError(f"{where}: nested more than {MAX_ARGUMENT_DEPTH} levels deep; a task is a flat object")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise TaskFileError(f"{where}: not JSON ({exc.msg} at column {exc.colno})") from None
        task = parse_task(data, where, fallback_id=f"line-{lineno}")
        if task.id in seen:
            raise TaskFileError(f"{where}: id {task.id!r} is used by an earlier task")
        seen.add(task.id)
        out.append(task)
    if not out:
        raise TaskFileError(f"{p}: no tasks in the file")
    return out


def drop_unusable(tasks: Sequence[Task], unusable: Mapping[str, str]) -> tuple[list[Task], list[str]]:
    """The tasks whose gold tools are all usable, and one warning per task left out
    (``unusable``: a gold tool's name -> why no arm can call it)."""
    kept: list[Task] = []
    warnings: list[str] = []
    for task in tasks:
        why = [f"{g!r} {unusable[g]}" for g in task.gold if g in unusable]
        if why:
            warnings.append(f"{task.where}: task {task.id!r} left out: gold tool {'; '.join(why)}")
        else:
            kept.append(task)
    return kept, warnings


StreamKind = Literal["tools", "workflows", "verbatim"]
STREAMS: tuple[StreamKind, ...] = ("tools", "workflows", "verbatim")
"""What the stream repeats: a tool (a session asks for it in a wording of any task that
uses it), a workflow (the same gold tools, in a wording of any task that has them), or
a task word for word."""


@attrs.frozen
class Mix:
    """How sessions draw their requests: ``pool`` distinct units (tools, workflows or
    tasks, by ``stream``) with Zipf exponent ``zipf``; ``requests`` a session; ``seeds``
    streams, drawn from ``seed``, ``seed + 1``, ..."""

    sessions: int
    pool: int = 40
    zipf: float = 1.1
    seed: int = 7
    stream: StreamKind = "tools"
    requests: int = 3
    seeds: int = 1

    @property
    def seed_list(self) -> tuple[int, ...]:
        return tuple(range(self.seed, self.seed + self.seeds))

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)


@attrs.frozen
class Stream:
    """The requests of each session, in order: the same for every arm and every run of
    the same mix and seed; and how much of it is worded afresh."""

    sessions: tuple[tuple[Task, ...], ...]
    units: int
    """Distinct units (tools, workflows or tasks) in the pool."""
    wordings: int
    """Distinct task texts the requests use."""
    repeated: int
    """Requests worded as an earlier request was (the same task again)."""

    def to_json(self) -> dict[str, int]:
        requests = sum(len(s) for s in self.sessions)
        return {"units": self.units, "requests": requests, "wordings": self.wordings, "repeated": self.repeated}


def units(tasks: Sequence[Task], kind: StreamKind) -> dict[str, list[Task]]:
    """The stream's units, in the order the file first names them, each with its wordings."""
    out: dict[str, list[Task]] = {}
    for task in tasks:
        if kind == "tools":
            keys: Sequence[str] = task.gold
        elif kind == "workflows":
            keys = ["\n".join(sorted(task.gold))]  # no tool name holds a line break
        else:
            keys = [task.id]
        for key in keys:
            out.setdefault(key, []).append(task)
    return out


def draw_stream(tasks: Sequence[Task], mix: Mix, seed: int | None = None) -> Stream:
    """The stream of ``mix`` (with ``seed``, default the mix's): units drawn Zipf-like
    from a pool, each drawn unit worded by the next of its tasks in a shuffled order, so
    that a unit comes back in a fresh wording until its wordings are used up. The pool
    prefers units with more than one wording when there are enough of them."""
    rng = random.Random(mix.seed if seed is None else seed)
    by_unit = units(tasks, mix.stream)
    names = list(by_unit)
    varied = [u for u in names if len(by_unit[u]) > 1]
    candidates = varied if len(varied) >= mix.pool else names
    pool = rng.sample(candidates, min(mix.pool, len(candidates)))  # also the popularity order
    weights = [rank**-mix.zipf for rank in range(1, len(pool) + 1)]  # never overflows, whatever zipf
    drawn = rng.choices(pool, weights=weights, k=mix.sessions * mix.requests)
    order = {u: rng.sample(by_unit[u], len(by_unit[u])) for u in pool}
    taken: dict[str, int] = {}
    requests: list[Task] = []
    for unit in drawn:
        wordings = order[unit]
        requests.append(wordings[taken.get(unit, 0) % len(wordings)])
        taken[unit] = taken.get(unit, 0) + 1
    seen: set[str] = set()
    repeated = 0
    for task in requests:
        repeated += task.id in seen
        seen.add(task.id)
    k = mix.requests
    sessions = tuple(tuple(requests[i : i + k]) for i in range(0, len(requests), k))
    return Stream(sessions, len(pool), len(seen), repeated)
