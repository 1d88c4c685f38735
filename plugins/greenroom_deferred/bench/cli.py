"""``greenroom bench``, which the deferred-tools plugin adds to the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer

bench_app = typer.Typer(help="Reproducible measurements.", no_args_is_help=True)


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
    # the replay loads the runtime and rich: only when the command runs, not at start-up
    from rich.console import Console

    from greenroom_deferred.bench.replay import compare, load_tools
    from greenroom_deferred.bench.report import plot_cumulative, plot_unavailable, print_session_costs

    # the missing extra is said before the replay, not as a traceback after its tables
    missing = plot_unavailable() if plot else None
    if missing:
        typer.echo(f"error: {missing}", err=True)
        raise typer.Exit(2)
    try:
        tools = load_tools(catalog, limit)
    except Exception as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    results = compare(tools, steps=steps, discoveries=discoveries)
    if as_json:
        typer.echo(json.dumps(results, indent=2))
    else:
        print_session_costs(Console(), f"{catalog.name} ({len(tools)} tools)", results)
    if plot:
        plot_cumulative(results, plot, title=f"{catalog.name}: {steps} steps, {discoveries} discoveries")
