"""``greenroom demo``: the command, its options, and its errors printed without a traceback."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console

from greenroom import ConfigError
from greenroom.kit import fail


def demo_cmd(
    strategy: Annotated[str, typer.Option(help="dispatch (default) or inject.")] = "dispatch",
    fresh: Annotated[bool, typer.Option("--fresh", help="Forget what earlier demo runs learned.")] = False,
    trace: Annotated[Path | None, typer.Option("--trace", help="Write a JSONL trace of events.")] = None,
    no_stream: Annotated[
        bool, typer.Option("--no-stream", help="Show the model's text when its response is complete.")
    ] = False,
) -> None:
    """Offline demo: an agent with 191 tools finds and uses the few it needs."""
    from greenroom_demo.run import run_demo  # the runtime loads only when the demo runs

    try:
        run_demo(Console(), strategy=strategy, fresh=fresh, trace=trace, stream=not no_stream)
    except ConfigError as exc:
        fail(str(exc), 2)
    except Exception as exc:  # a plugin that fails to start names itself; no traceback for that
        fail(f"{type(exc).__name__}: {exc}", 1)
