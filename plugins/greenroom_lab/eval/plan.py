"""One evaluation from start to report: configs for the arms, the session stream, the runs.

``prepare`` checks everything that can be checked before a session runs (settings, the
task file, the output folder, each task's gold tools against the config's) and returns a
``Plan``; ``Plan.run`` runs it. ``evaluate`` does both: what Python users call from a
script or a notebook. ``greenroom eval`` calls them apart, to say which tasks were left
out before its progress bars start.
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import attrs

from greenroom import Model, abuild_runtime
from greenroom_lab.costing import DEFAULT_PRICES
from greenroom_lab.eval.agent import SimulatedAgent
from greenroom_lab.eval.arms import Arm, base_config, write_overlays
from greenroom_lab.eval.checks import CHECK_TIMEOUT, Judge
from greenroom_lab.eval.report import summarize
from greenroom_lab.eval.results import EvalError, ResultsFile, Settings, digest
from greenroom_lab.eval.runner import ArmSetup, Progress, Retried, no_progress, no_retries, run_arm
from greenroom_lab.eval.scripting import ScriptingAgent
from greenroom_lab.eval.tasks import STREAMS, Mix, Stream, Task, draw_stream, drop_unusable, load_tasks
from greenroom_lab.eval.window import window_of

log = logging.getLogger("greenroom.eval")

AgentKind = Literal["simulated", "model"]

PRICE_ALIASES = {"no-cache": "no-cache:claude-sonnet-4.5"}
"""Short names ``--price`` takes beside the tables' own."""

MAX_SEEDS = 100
MAX_REQUESTS = 50


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


def prepare(
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
    check_timeout: float = CHECK_TIMEOUT,
    context_window: int | None = None,
) -> Plan:
    """Check the evaluation and make it ready to run (see the module)."""
    price = PRICE_ALIASES.get(price, price)
    if price not in DEFAULT_PRICES:
        raise EvalError(f"--price: no price named {price!r}; the prices are {', '.join(DEFAULT_PRICES)}")
    if concurrency < 1:
        raise EvalError("--concurrency must be at least 1")
    if mix.sessions < 1 or mix.pool < 1:
        raise EvalError("--sessions and --pool must be at least 1")
    if mix.stream not in STREAMS:
        raise EvalError(f"--stream must be one of {', '.join(STREAMS)}, not {mix.stream!r}")
    if not 1 <= mix.requests <= MAX_REQUESTS:
        raise EvalError(f"--requests must be from 1 to {MAX_REQUESTS}, not {mix.requests}")
    if not 1 <= mix.seeds <= MAX_SEEDS:
        raise EvalError(f"--seeds must be from 1 to {MAX_SEEDS}, not {mix.seeds}")
    if context_window is not None and context_window < 0:
        raise EvalError(f"--context-window must be a number of tokens, 0 for none, not {context_window}")
    if not math.isfinite(mix.zipf) or mix.zipf < 0:
        raise EvalError(f"--zipf must be a number of at least 0 (0: every task as likely), not {mix.zipf}")
    if not math.isfinite(check_timeout) or check_timeout <= 0:
        raise EvalError(f"--check-timeout must be a number of seconds above 0, not {check_timeout}")
    if agent == "model" and target.tools is not None and not target.model:
        raise EvalError("--agent model with --tools needs --model SPEC (for example openai:gpt-5)")
    tasks = load_tasks(tasks_path)
    _make_folder(out)
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
    kept, warnings = drop_unusable(tasks, anyio.run(unusable_gold, base, tasks))
    if not kept:
        raise EvalError(f"{tasks_path}: no task is left to run; " + "; ".join(warnings[:3]))
    kept_ids = {t.id for t in kept}
    settings = Settings(
        arms=tuple(a.name for a in arms),
        mix=mix,
        agent=agent,
        price=price,
        tasks_digest=digest(tasks_path),
        target=str(base),
        left_out=tuple(t.id for t in tasks if t.id not in kept_ids),
        context_window=context_window,
    )
    results = ResultsFile(out, settings, fresh=fresh)
    return Plan(
        arms=tuple(arms),
        streams={seed: draw_stream(kept, mix, seed) for seed in mix.seed_list},
        configs={seed: write_overlays(arms, base, out, max_steps, seed) for seed in mix.seed_list},
        results=results,
        settings=settings,
        agent=agent,
        price=price,
        concurrency=concurrency,
        judge=Judge(check_timeout),
        warnings=tuple(warnings),
        context_window=context_window,
    )


def _make_folder(out: Path) -> None:
    if out.exists() and not out.is_dir():
        raise EvalError(f"--out {out}: names a file; --out is the folder the results go to")
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise EvalError(f"--out {out}: cannot make the folder ({exc.strerror or exc})") from None


async def unusable_gold(config: Path, tasks: Sequence[Task]) -> dict[str, str]:
    """The gold tools no arm of ``config`` can call, each with why: not among its tools,
    an invalid parameter schema, or hidden by its policy. Asked of a runtime built from
    the config, as the arms build theirs (the model is not needed, and not built)."""
    rt = await abuild_runtime(config, model=SimulatedAgent())
    try:
        gold = {g for t in tasks for g in t.gold}
        usable = gold.intersection(d.name for d in rt.universe())
        broken = rt.tools.unusable
        out = {
            g: (
                f"is unusable: its parameter schema is invalid ({broken[g]})"
                if g in broken
                else "is not among the config's tools"
            )
            for g in gold - usable
        }
        for name, why in rt.scoping.policy_hides(sorted(usable)):
            out[name] = f"is hidden by the config's policy ({why.describe()})"
        return out
    finally:
        await rt.aclose()


@attrs.frozen
class Plan:
    """An evaluation ready to run: checked, its configs written, its sessions drawn (one
    stream and one config per arm for each seed)."""

    arms: tuple[Arm, ...]
    streams: Mapping[int, Stream]
    configs: Mapping[int, Mapping[str, Path]]
    results: ResultsFile
    settings: Settings
    agent: AgentKind
    price: str
    concurrency: int
    judge: Judge
    warnings: tuple[str, ...]
    """One line per task left out (its gold tools cannot be called), with its file and line."""
    context_window: int | None = None

    @property
    def stream(self) -> tuple[tuple[Task, ...], ...]:
        """The sessions of the first seed."""
        return next(iter(self.streams.values())).sessions

    def run(self, progress: Progress = no_progress, retried: Retried = no_retries) -> dict[str, Any]:
        """Run every arm over the same session stream, seed by seed; return the report
        (``summarize``)."""
        retries: dict[str, int] = {}
        windows: dict[str, int] = {}

        def model(arm: Arm) -> Model | None:
            if self.agent != "simulated":
                return None
            # made with nothing: it can read no gold
            return ScriptingAgent() if arm.code else SimulatedAgent()

        async def go() -> None:
            # simulated sessions are CPU work on this loop: running them side by side gains nothing
            limiter = anyio.CapacityLimiter(1 if self.agent == "simulated" else self.concurrency)
            for seed, stream in self.streams.items():
                for arm in self.arms:
                    setup = ArmSetup(
                        functools.partial(model, arm),
                        self.price,
                        self.judge,
                        limiter,
                        self.context_window,
                        window_of(self.price),
                    )
                    spent, windows[arm.name] = await run_arm(
                        arm,
                        self.configs[seed][arm.name],
                        seed,
                        stream.sessions,
                        self.results,
                        setup,
                        progress,
                        retried,
                    )
                    retries[arm.name] = retries.get(arm.name, 0) + spent

        anyio.run(go)
        report = summarize(
            {seed: {a.name: self.results.results(a.name, seed) for a in self.arms} for seed in self.streams}
        )
        for entry in report["arms"]:
            entry["retries"] = retries.get(entry["name"], 0)  # provider retries in this run
            entry["context_window"] = windows.get(entry["name"], 0)
        report["settings"] = self.settings.to_json()
        report["stream"] = {str(seed): stream.to_json() for seed, stream in self.streams.items()}
        report["left_out"] = list(self.warnings)
        return report


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
    check_timeout: float = CHECK_TIMEOUT,
    context_window: int | None = None,
    progress: Progress = no_progress,
    retried: Retried = no_retries,
) -> dict[str, Any]:
    """``prepare`` and run: the report, whose ``left_out`` lists the tasks left out (each
    is also logged as a warning on ``greenroom.eval``)."""
    plan = prepare(
        target,
        tasks_path,
        arms,
        mix,
        out,
        agent=agent,
        price=price,
        concurrency=concurrency,
        max_steps=max_steps,
        fresh=fresh,
        check_timeout=check_timeout,
        context_window=context_window,
    )
    for warning in plan.warnings:
        log.warning("%s", warning)
    return plan.run(progress, retried)
