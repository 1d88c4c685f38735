"""Running the arms: every session of the stream under every arm, resumable.

Each arm is one runtime built from its overlay config, with ``EvalProbe`` registered.
A session is one ``Session`` of that runtime with a run per request, so each request
reads the conversation before it. Arms that learn run their sessions one after another
(each learns from the ones before); others run them concurrently up to
``concurrency`` calls at once (real providers' rate limits; the providers' own retry
policy handles a 429). The model is asked only for requests that fit the context
window (``window``). Every finished session goes to the results file at once
(``results``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path

import anyio
import attrs

from greenroom import CatalogTool, Model, ProviderModel, Runtime, abuild_runtime
from greenroom.kit import redact_known
from greenroom_lab.costing import DEFAULT_PRICES, Price, Request, bill
from greenroom_lab.eval.arms import Arm
from greenroom_lab.eval.checks import CheckFailed, Judge
from greenroom_lab.eval.record import EvalProbe, SessionRecord, Step, requests_of
from greenroom_lab.eval.results import EvalError, ResultsFile, SessionResult, request_trace
from greenroom_lab.eval.tasks import Task
from greenroom_lab.eval.window import PastWindow, Windowed, model_window

__all__ = ["EvalError", "run_arm", "session_cost"]

log = logging.getLogger("greenroom.eval")


def session_cost(steps: Sequence[Step], price: Price, previous: Request | None, key: str) -> tuple[float, int]:
    """Cost and cache-read tokens of a session: from the provider's usage when it
    reported any, else billed with the prompt-cache simulation (``previous`` is the last
    request before this session, whose prefix a back-to-back session can reuse; ``key``
    names the session's message blocks)."""
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
    requests = requests_of(steps, key)
    bills = bill([previous, *requests], price)[1:] if previous is not None else bill(requests, price)
    return sum(b.cost for b in bills), sum(b.cache_read for b in bills)


def cost_without_cache(steps: Sequence[Step], price: Price) -> float:
    """Every input token at the input price (as reported, else as greenroom counted it)."""
    return sum((s.input_tokens or s.counted) * price.input + s.output_tokens * price.output for s in steps) / 1e6


Progress = Callable[[str, SessionResult], None]
"""Told an arm's name and each session it finished."""
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
    model: Model
    price: Price
    judge: Judge
    seed: int
    previous: Request | None = None
    retries: int = 0

    async def session(self, index: int, tasks: Sequence[Task]) -> SessionResult:
        session = self.runtime.session()
        steps: list[Step] = []
        traces = []
        records: list[SessionRecord] = []
        stop, error, done, over = "", "", 0, 0
        for task in tasks:
            run = self.runtime.start_run(session, task.query)
            try:
                outcome = await run.drive(self.model)
                stop, answer = outcome.stop_reason, outcome.text
            except PastWindow as exc:
                stop, answer, error, over = "error", "", str(exc), exc.tokens
            except Exception as exc:  # a model that failed for good (retries spent): an error of this session only
                # named in the report (a missing API key, a refused request), never as a traceback per session
                log.debug("session %d of arm %s ended in an error", index, self.arm.name, exc_info=True)
                stop, answer, error = "error", "", redact_known(f"the model failed: {type(exc).__name__}: {exc}")
            record = run.ctx.state[SessionRecord]
            if over:
                del record.steps[-1]  # counted, never sent: neither billed nor counted as input
            records.append(record)
            steps += record.steps
            success = False
            if stop != "error":
                try:
                    success = await self.judge(task, record.calls, answer)
                except CheckFailed as exc:  # not done, and said: an error of the arm, not a task failed
                    error = error or str(exc)
            done += success
            traces.append(request_trace(task.id, success, record.queries, record.calls, answer))
            if stop == "error":
                break  # the model failed: the session's later requests are not asked
        cost, cached = session_cost(steps, self.price, self.previous, session.id)
        if steps:
            self.previous = requests_of(steps, session.id)[-1]
        return SessionResult(
            arm=self.arm.name,
            index=index,
            task=tasks[0].id,
            success=done == len(tasks),
            steps=len(steps),
            searches=sum(r.searches for r in records),
            group_loads=sum(r.group_loads for r in records),
            input_tokens=sum(r.input_tokens for r in records),
            cached_tokens=cached,
            output_tokens=sum(s.output_tokens for s in steps),
            cost=cost,
            calls=sum(len(r.calls) for r in records),
            invalid_calls=sum(not c.valid for r in records for c in r.calls),
            stop_reason=stop,
            error=error,
            tail=self.previous,
            seed=self.seed,
            done=done,
            asked=len(tasks),
            cost_no_cache=cost_without_cache(steps, self.price.without_cache()),
            over_window=over,
            requests=tuple(traces),
        )


@attrs.frozen
class ArmSetup:
    """What every arm of an evaluation runs with."""

    model: Callable[[], Model | None]
    """The arm's model (None: the one its config names)."""
    price: str
    judge: Judge
    limiter: anyio.CapacityLimiter
    window: int | None
    """Tokens a request may have (0: no limit; None: the model family's, ``window``)."""
    simulated_window: int = 0
    """The window when the model is the simulated agent (the ``--price`` model's)."""


async def run_arm(
    arm: Arm,
    config: Path,
    seed: int,
    stream: Sequence[Sequence[Task]],
    results: ResultsFile,
    setup: ArmSetup,
    progress: Progress,
    retried: Retried = no_retries,
) -> tuple[int, int]:
    """Run the arm's sessions not yet in ``results``; returns its provider retries and the
    context window its requests were held to."""
    probe = EvalProbe()
    given = setup.model()
    runtime = await abuild_runtime(config, model=given, extra_plugins=[probe])
    try:
        probe.stand_ins = frozenset(n for n, t in runtime.tools.items() if isinstance(t, CatalogTool))
        earlier = results.results(arm.name, seed)
        window = setup.window
        if window is None:
            window = setup.simulated_window if given is not None else model_window(runtime.model)
        model = Windowed(runtime.model, window)
        price = DEFAULT_PRICES[setup.price]
        run = ArmRun(arm, runtime, model, price, setup.judge, seed, earlier[-1].tail if earlier else None)
        _count_retries(run, retried)
        todo = [(i, t) for i, t in enumerate(stream) if (seed, arm.name, i) not in results.done]

        queue = iter(todo)  # workers take the next session in order: at most ``workers`` at once

        async def worker() -> None:
            for index, tasks in queue:
                async with setup.limiter:
                    result = await run.session(index, tasks)
                results.append(result)
                progress(arm.name, result)

        workers = 1 if arm.learns else max(1, min(int(setup.limiter.total_tokens), len(todo)))
        async with anyio.create_task_group() as tg:
            for _ in range(workers):
                tg.start_soon(worker)
        return run.retries, window
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
