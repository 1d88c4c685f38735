"""One evaluation from start to report: configs for the arms, the session stream, the runs.

``evaluate`` is what ``greenroom eval`` calls, and what Python users call to evaluate
from a script or a notebook.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import attrs

from greenroom import Model
from greenroom_deferred.bench.costing import DEFAULT_PRICES
from greenroom_deferred.eval.agent import SimulatedAgent
from greenroom_deferred.eval.arms import Arm, base_config, write_overlays
from greenroom_deferred.eval.report import summarize
from greenroom_deferred.eval.runner import (
    EvalError,
    Progress,
    ResultsFile,
    Retried,
    Settings,
    digest,
    no_progress,
    no_retries,
    run_arm,
)
from greenroom_deferred.eval.tasks import Mix, load_tasks, session_stream

AgentKind = Literal["simulated", "model"]


@attrs.frozen
class Target:
    """What is evaluated: a config file, or a bare catalog (with a model spec or none)."""

    config: Path | None = None
    tools: Path | None = None
    model: str | None = None

    def __attrs_post_init__(self) -> None:
        if (self.config is None) == (self.tools is None):
            raise EvalError("give a config file or --tools TOOLS.jsonl (one of them)")

    @property
    def label(self) -> str:
        path = self.config or self.tools
        return str(path)


def evaluate(
    target: Target,
    tasks_path: Path,
    arms: Sequence[Arm],
    mix: Mix,
    out: Path,
    *,
    agent: AgentKind = "simulated",
    price: str = "anthropic:claude-sonnet-4.5",
    concurrency: int = 4,
    max_steps: int | None = None,
    fresh: bool = False,
    progress: Progress = no_progress,
    retried: Retried = no_retries,
) -> dict[str, Any]:
    """Run every arm over the same session stream; return the report (``summarize``)."""
    if price not in DEFAULT_PRICES:
        raise EvalError(f"--price: no price named {price!r}; the prices are {', '.join(DEFAULT_PRICES)}")
    if concurrency < 1:
        raise EvalError("--concurrency must be at least 1")
    if agent == "model" and target.tools is not None and not target.model:
        raise EvalError("--agent model with --tools needs --model SPEC (for example openai:gpt-5)")
    tasks = load_tasks(tasks_path)
    stream = session_stream(tasks, mix)
    if target.config is not None:
        base = target.config.resolve()
        if not base.is_file():
            raise EvalError(f"{target.config}: no such config file")
    else:
        assert target.tools is not None
        if not target.tools.is_file():
            raise EvalError(f"--tools {target.tools}: no such file")
        base = base_config(target.tools, out, model=target.model, max_steps=max_steps or 12)
        max_steps = None  # the base config has it
    settings = Settings(
        arms=tuple(a.name for a in arms),
        mix=mix,
        agent=agent,
        price=price,
        tasks_digest=digest(tasks_path),
        target=str(base),
    )
    results = ResultsFile(out, settings, fresh=fresh)
    configs = write_overlays(arms, base, out, max_steps)

    def model() -> Model | None:
        return SimulatedAgent() if agent == "simulated" else None

    retries: dict[str, int] = {}

    async def go() -> None:
        # simulated sessions are CPU work on this loop: running them side by side gains nothing
        limiter = anyio.CapacityLimiter(1 if agent == "simulated" else concurrency)
        for arm in arms:
            retries[arm.name] = await run_arm(
                arm,
                configs[arm.name],
                stream,
                results,
                model=model,
                price=price,
                limiter=limiter,
                progress=progress,
                retried=retried,
            )

    anyio.run(go)
    report = summarize({a.name: results.results(a.name) for a in arms})
    for entry in report["arms"]:
        entry["retries"] = retries.get(entry["name"], 0)  # provider retries in this run
    report["settings"] = settings.to_json()
    return report
