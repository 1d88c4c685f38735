"""``greenroom inspect`` and ``greenroom run``: the first request, and a run with a live view."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer

from greenroom import events as ev
from greenroom.cli.app import app, console, err_console, fail
from greenroom.config import ConfigError
from greenroom.failures import PluginHookError, first_error
from greenroom.models import ModelError


def _build(path: Path, **kw: Any) -> Any:
    from greenroom.compose import build_runtime

    try:
        return build_runtime(path, **kw)
    except ConfigError as exc:
        fail(str(exc))
    except Exception as exc:  # a plugin failing to start must not print a traceback
        fail(f"{type(exc).__name__}: {exc}")


@app.command("inspect")
def inspect_cmd(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show what the model would see on the first step: each tool eager or deferred."""
    from greenroom.cli.inspection import inspect_runtime, print_inspection

    rt = _build(path)
    try:
        report = anyio.run(inspect_runtime, rt)
    except PluginHookError as exc:
        fail(str(exc), 1)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        print_inspection(console, report)


@app.command("run")
def run_cmd(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    user_input: Annotated[str, typer.Argument(metavar="INPUT", help="The user's message.")],
    trace: Annotated[Path | None, typer.Option("--trace", help="Write a JSONL trace of events.")] = None,
    session: Annotated[Path | None, typer.Option("--session", help="Session file to resume and save.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the final answer.")] = False,
) -> None:
    """Run the agent on one input (resuming and saving --session if given)."""
    from greenroom.cli.live import LiveView
    from greenroom.session import SessionError

    bus = ev.EventBus()
    writer = ev.TraceWriter(trace) if trace else None
    if writer:
        bus.subscribe(writer)
    if not quiet:
        bus.subscribe(LiveView(console))
    rt = _build(path, events=bus)

    async def go() -> Any:
        sess = None
        try:
            sess = rt.load_session(session) if session and session.exists() else rt.session()
            return await sess.run(user_input)
        finally:
            # whatever ended the run, the session keeps everything up to that point
            if session and sess is not None:
                sess.save(session)
            await rt.aclose()

    try:
        outcome = anyio.run(go)
    except SessionError as exc:
        fail(str(exc))
    except PluginHookError as exc:
        fail(str(exc), 1)
    except ModelError as exc:
        fail(f"the model failed: {exc}", 1)
    except Exception as exc:
        error = first_error(exc)
        fail(f"{type(error).__name__}: {error}", 1)
    finally:
        if writer:
            writer.close()
    if quiet:
        typer.echo(outcome.text)
    if outcome.stop_reason != "final":
        err_console.print(f"[yellow]run stopped: {outcome.stop_reason}[/]")
        raise typer.Exit(1)
