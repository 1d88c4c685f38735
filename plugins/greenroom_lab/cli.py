"""The lab's commands: ``greenroom eval`` and ``greenroom bench sessions``, their options,
and their errors said in one line, never as a traceback. What they run loads only when
they run, not at CLI start-up."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from greenroom.kit import fail
from greenroom_lab.eval.arms import ARMS, DEFAULT_ARMS

DEFAULTS = ", ".join(DEFAULT_ARMS)

bench_app = typer.Typer(help="Reproducible measurements.", no_args_is_help=True)

EVAL_HELP = (
    "Task-level evaluation: run the tasks under several arms (all-eager, dispatch, inject, "
    "native, with or without learned priors) and compare task success, searches, tokens and cost."
)


def eval_command(
    config: Annotated[Path | None, typer.Argument(help="Config file to evaluate (or give --tools).")] = None,
    tasks: Annotated[Path, typer.Option(help="Task file: one {query, gold[, id, check]} a line.")] = Path(
        "tasks.jsonl"
    ),
    tools: Annotated[Path | None, typer.Option(help="A bare tool catalog (JSON/JSONL) instead of a config.")] = None,
    agent: Annotated[str, typer.Option(help="simulated (no key) or model (the config's model).")] = "simulated",
    model: Annotated[str | None, typer.Option(help="Model spec for --tools with --agent model.")] = None,
    arms: Annotated[
        str | None, typer.Option(help=f"Comma-separated, of {', '.join(ARMS)}; default {DEFAULTS}.")
    ] = None,
    sessions: Annotated[int, typer.Option(help="Sessions per arm (and seed).")] = 200,
    pool: Annotated[int, typer.Option(help="Distinct tools, workflows or tasks (--stream) drawn from.")] = 40,
    zipf: Annotated[float, typer.Option(help="Zipf exponent of the mix (0: uniform).")] = 1.1,
    seed: Annotated[int, typer.Option(help="Seed of the mix (the first, with --seeds).")] = 7,
    stream: Annotated[
        str, typer.Option(help="What recurs, each time in a fresh wording: tools, workflows; or verbatim tasks.")
    ] = "tools",
    requests: Annotated[int, typer.Option(help="Requests per session (one conversation).")] = 3,
    seeds: Annotated[int, typer.Option(help="Streams to run, seeds --seed on: figures get a ± spread.")] = 1,
    context_window: Annotated[
        int | None, typer.Option(help="Tokens a request may have (0: no limit); default: the model's.")
    ] = None,
    max_steps: Annotated[int | None, typer.Option(help="Model calls per session at most.")] = None,
    price: Annotated[
        str, typer.Option(help="Price table for session cost (no-cache: without prompt caching).")
    ] = "anthropic:claude-sonnet-4.5",
    concurrency: Annotated[int, typer.Option(help="Sessions at once against a real model.")] = 4,
    check_timeout: Annotated[float, typer.Option(help="Seconds a task's checker may take per session.")] = 10.0,
    out: Annotated[Path, typer.Option(help="Folder for results (resumed when run again).")] = Path("greenroom-eval"),
    fresh: Annotated[bool, typer.Option(help="Forget results already in --out.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG of the learning curves.")] = None,
) -> None:
    """Run tasks under several arms and compare them (see docs/eval.md)."""
    # rich and the runtime load only when the command runs, not at CLI start-up
    from rich.console import Console
    from rich.markup import escape
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from greenroom import ConfigError
    from greenroom_lab.eval.arms import ArmError, parse_arms
    from greenroom_lab.eval.plan import Target, prepare
    from greenroom_lab.eval.report import plot_curves, print_report
    from greenroom_lab.eval.runner import EvalError
    from greenroom_lab.eval.tasks import Mix, TaskFileError
    from greenroom_lab.plots import plot_unavailable

    err = Console(stderr=True)
    missing = plot_unavailable() if plot else None
    if agent not in ("simulated", "model"):
        fail(f"--agent must be simulated or model, not {agent!r}")
    if missing:
        fail(missing)
    try:
        chosen = parse_arms(arms)
        target = Target(config=config, tools=tools, model=model)
        plan = prepare(
            target,
            tasks,
            chosen,
            Mix(sessions, pool, zipf, seed, stream, requests, seeds),  # type: ignore[arg-type]  # stream checked
            out,
            agent="simulated" if agent == "simulated" else "model",
            price=price,
            concurrency=concurrency,
            max_steps=max_steps,
            fresh=fresh,
            check_timeout=check_timeout,
            context_window=context_window,
        )
    except (ArmError, EvalError, TaskFileError, ConfigError) as exc:
        fail(str(exc))
    for warning in plan.warnings:  # before the bars: each task left out, once, with its line
        err.print(f"[yellow]warning:[/] {escape(warning)}", highlight=False, soft_wrap=True, emoji=False)
    counts: dict[str, list[int]] = {}
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as bar:
        ids = {a.name: bar.add_task(a.name, total=sessions * seeds) for a in chosen}

        retries: dict[str, int] = {}

        def describe(arm: str) -> str:
            done = counts.get(arm, [0, 0, 0, 0])
            text = f"{arm} · {done[1] / done[3]:.0%} done" if done[3] else arm
            text += f" · {done[2]} errors" if done[2] else ""
            return text + (f" · {retries[arm]} retries" if retries.get(arm) else "")

        def progress(arm: str, result: Any) -> None:
            done = counts.setdefault(arm, [0, 0, 0, 0])  # sessions, requests done, errors, requests
            done[0] += 1
            done[1] += result.done
            done[2] += int(result.stop_reason == "error" or bool(result.error))
            done[3] += result.asked
            bar.update(ids[arm], advance=1, description=describe(arm))

        def retried(arm: str, count: int) -> None:
            retries[arm] = count
            bar.update(ids[arm], description=describe(arm))

        try:
            report = plan.run(progress, retried)
        except (EvalError, ConfigError) as exc:
            bar.stop()
            fail(str(exc))
        except KeyboardInterrupt:
            bar.stop()
            kept = sum(done[0] for done in counts.values())
            typer.echo(f"stopped: {kept} sessions of this run kept in {out}; run the same command to go on", err=True)
            raise typer.Exit(130) from None
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        spread = f", {seeds} seeds" if seeds > 1 else ""
        print_report(Console(), report, f"{target.label} · {sessions} sessions{spread} · agent {agent}")
    if plot:
        plot_curves(report, plot, f"{target.label}: {sessions} sessions, agent {agent}")


@bench_app.command("sessions")
def bench_sessions(
    catalog: Annotated[Path, typer.Option(help="Tool catalog (JSON/JSONL).")],
    steps: Annotated[int, typer.Option(help="Model calls per session.")] = 30,
    discoveries: Annotated[int, typer.Option(help="Tools discovered over the session.")] = 5,
    limit: Annotated[int | None, typer.Option(help="Use only the first N tools.")] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG of cumulative cost per step.")] = None,
) -> None:
    """Price one replayed session under each strategy, as providers bill it."""
    from rich.console import Console

    from greenroom_lab.bench.replay import compare, load_tools
    from greenroom_lab.bench.report import plot_cumulative, print_session_costs
    from greenroom_lab.plots import plot_unavailable

    # the missing extra is said before the replay, not as a traceback after its tables
    missing = plot_unavailable() if plot else None
    if missing:
        fail(missing)
    try:
        tools = load_tools(catalog, limit)
    except Exception as exc:
        fail(str(exc))
    results = compare(tools, steps=steps, discoveries=discoveries)
    if as_json:
        typer.echo(json.dumps(results, indent=2))
    else:
        print_session_costs(Console(), f"{catalog.name} ({len(tools)} tools)", results)
    if plot:
        plot_cumulative(results, plot, title=f"{catalog.name}: {steps} steps, {discoveries} discoveries")
