"""``greenroom demo``."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from greenroom.cli.app import app, console, fail
from greenroom.config import ConfigError


@app.command("demo")
def demo_cmd(
    strategy: Annotated[str, typer.Option(help="dispatch (default) or inject.")] = "dispatch",
    fresh: Annotated[bool, typer.Option("--fresh", help="Forget what earlier demo runs learned.")] = False,
    trace: Annotated[Path | None, typer.Option("--trace", help="Write a JSONL trace of events.")] = None,
) -> None:
    """Offline demo: an agent with 191 tools finds and uses the few it needs."""
    from greenroom.demo import run_demo

    try:
        run_demo(console, strategy=strategy, fresh=fresh, trace=trace)
    except ConfigError as exc:
        fail(str(exc))
