"""Running the arms: every session of the stream under every arm, resumable.

Each arm is one runtime built from its overlay config, with ``EvalProbe`` registered.
Arms that learn run their sessions one after another (each learns from the ones
before); others run them concurrently up to ``concurrency`` calls at once (real
providers' rate limits; the providers' own retry policy handles a 429). Every finished
session is appended to ``sessions.jsonl`` in the output folder at once, so an
evaluation stopped half-way (Ctrl-C, a provider outage) goes on from where it was when
run again with the same settings; a session that was running then runs again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from greenroom import CatalogTool, Model, ProviderModel, Runtime, abuild_runtime
from greenroom.kit import redact_known
from greenroom_lab.costing import DEFAULT_PRICES, Price, Request, bill
from greenroom_lab.eval.arms import Arm
from greenroom_lab.eval.checks import CheckFailed, Judge
from greenroom_lab.eval.record import EvalProbe, SessionRecord
from greenroom_lab.eval.tasks import Mix, Task

log = logging.getLogger("greenroom.eval")

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

    def to_json(self) -> dict[str, Any]:
        return {
            **attrs.asdict(self, recurse=False),
            "arms": list(self.arms),
            "mix": self.mix.to_json(),
            "left_out": list(self.left_out),
        }


@attrs.frozen
class SessionResult:
    arm: str
    index: int
    task: str
    success: bool
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
    """Why the session ended in an error (its model failed) or its task could not be judged
    (its checker failed), else empty."""
    tail: Request | None = None
    """The session's last request: where the next session's prompt cache starts from
    (kept so that a resumed evaluation bills the next session as an unbroken one would)."""

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SessionResult:
        values = {f.name: data[f.name] for f in attrs.fields(cls) if f.name not in ("tail", "error")}
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
        return cls(**values, error=str(data.get("error") or ""), tail=tail)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()[:16]


class ResultsFile:
    """``sessions.jsonl`` and ``eval.json`` of an output folder."""

    def __init__(self, folder: Path, settings: Settings, *, fresh: bool) -> None:
        self.folder = folder
        self.path = folder / RESULTS
        self.done: dict[tuple[str, int], SessionResult] = {}
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
                self.done[(result.arm, result.index)] = result

    def append(self, result: SessionResult) -> None:
        self.done[(result.arm, result.index)] = result
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(result.to_json()) + "\n")
            fh.flush()
            os.fsync(fh.fileno())

    def results(self, arm: str) -> list[SessionResult]:
        return sorted((r for (a, _), r in self.done.items() if a == arm), key=lambda r: r.index)


def session_cost(record: SessionRecord, price: Price, previous: Request | None) -> tuple[float, int]:
    """Cost and cache-read tokens of a session: from the provider's usage when it
    reported any, else billed with the prompt-cache simulation (``previous`` is the last
    request before this session, whose prefix a back-to-back session can reuse)."""
    steps = record.steps
    if steps and all(s.input_tokens > 0 for s in steps):
        cost = 0.0
        for s in steps:
            fresh = max(0, s.input_tokens - s.cached_input_tokens - s.cache_write_tokens)
            cost += (
                fresh * price.input
                + s.cached_input_tokens * price.cache_read
                + s.cache_write_tokens * price.cache_write
                + s.output_tokens * price.output
            )
        return cost / 1_000_000, sum(s.cached_input_tokens for s in steps)
    requests = [s.request for s in steps]
    bills = bill([previous, *requests], price)[1:] if previous is not None else bill(requests, price)
    return sum(b.cost for b in bills), sum(b.cache_read for b in bills)


Progress = Callable[[str, SessionResult], None]
Retried = Callable[[str, int], None]
"""Told an arm's name and its provider retries so far, at each retry."""


def no_progress(arm: str, result: SessionResult) -> None:
    """The ``Progress`` of a caller that shows none."""


def no_retries(arm: str, retries: int) -> None:
    """The ``Retried`` of a caller that shows none."""


@attrs.define
class ArmRun:
    """One arm's runtime and the state its sessions share."""

    arm: Arm
    runtime: Runtime
    price: Price
    judge: Judge
    previous: Request | None = None
    retries: int = 0

    async def session(self, index: int, task: Task) -> SessionResult:
        run = self.runtime.start_run(self.runtime.session(), task.query)
        success, error = False, ""
        try:
            outcome = await run.drive(self.runtime.model)
            stop, answer = outcome.stop_reason, outcome.text
        except Exception as exc:  # a model that failed for good (retries spent): an error of this session only
            # named in the report (a missing API key, a refused request), never as a traceback per session
            log.debug("session %d of arm %s ended in an error", index, self.arm.name, exc_info=True)
            stop, answer, error = "error", "", redact_known(f"the model failed: {type(exc).__name__}: {exc}")
        record = run.ctx.state[SessionRecord]
        cost, cached = session_cost(record, self.price, self.previous)
        if record.steps:
            self.previous = record.steps[-1].request
        if stop != "error":
            try:
                success = await self.judge(task, record.calls, answer)
            except CheckFailed as exc:  # not done, and said: an error of the arm, not a task failed
                error = str(exc)
        return SessionResult(
            arm=self.arm.name,
            index=index,
            task=task.id,
            success=success,
            steps=len(record.steps),
            searches=record.searches,
            group_loads=record.group_loads,
            input_tokens=record.input_tokens,
            cached_tokens=cached,
            output_tokens=sum(s.output_tokens for s in record.steps),
            cost=cost,
            calls=len(record.calls),
            invalid_calls=sum(not c.valid for c in record.calls),
            stop_reason=stop,
            error=error,
            tail=self.previous,
        )


async def run_arm(
    arm: Arm,
    config: Path,
    stream: Sequence[Task],
    results: ResultsFile,
    *,
    model: Callable[[], Model | None],
    price: str,
    judge: Judge,
    limiter: anyio.CapacityLimiter,
    progress: Progress,
    retried: Retried = no_retries,
) -> int:
    """Run the arm's sessions not yet in ``results``; returns its provider retries."""
    probe = EvalProbe()
    runtime = await abuild_runtime(config, model=model(), extra_plugins=[probe])
    try:
        probe.stand_ins = frozenset(n for n, t in runtime.tools.items() if isinstance(t, CatalogTool))
        earlier = results.results(arm.name)
        run = ArmRun(arm, runtime, DEFAULT_PRICES[price], judge, earlier[-1].tail if earlier else None)
        _count_retries(run, retried)
        todo = [(i, t) for i, t in enumerate(stream) if (arm.name, i) not in results.done]

        queue = iter(todo)  # workers take the next session in order: at most ``workers`` at once

        async def worker() -> None:
            for index, task in queue:
                async with limiter:
                    result = await run.session(index, task)
                results.append(result)
                progress(arm.name, result)

        workers = 1 if arm.learns else max(1, min(int(limiter.total_tokens), len(todo)))
        async with anyio.create_task_group() as tg:
            for _ in range(workers):
                tg.start_soon(worker)
        return run.retries
    finally:
        await runtime.aclose()


def _count_retries(run: ArmRun, retried: Retried) -> None:
    """Count a provider's retries through its policy's ``sleep`` (one wait per retry)."""
    model = run.runtime.model
    if not isinstance(model, ProviderModel):
        return
    wait = model.retry.sleep

    async def sleep(seconds: float) -> None:
        run.retries += 1
        retried(run.arm.name, run.retries)
        await wait(seconds)

    model.retry = attrs.evolve(model.retry, sleep=sleep)
