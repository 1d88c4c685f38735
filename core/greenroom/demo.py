"""``greenroom demo``: the offline showcase, built from the config in ``examples/demo``."""

from __future__ import annotations

from pathlib import Path

import anyio
from rich.console import Console

from greenroom import events as ev
from greenroom.compose import build_runtime
from greenroom.report import LiveView

DEMO_DIR = Path(__file__).resolve().parents[2] / "examples" / "demo"


def run_demo(console: Console, *, strategy: str = "dispatch", fresh: bool = False, trace: Path | None = None) -> None:
    config = DEMO_DIR / "demo.toml"
    bus = ev.EventBus()
    bus.subscribe(LiveView(console))
    writer = ev.TraceWriter(trace) if trace else None
    if writer:
        bus.subscribe(writer)
    rt = build_runtime(config, events=bus)

    async def go() -> None:
        try:
            outcome = await rt.session().run(TASK)
            console.print(f"[bold]finished[/] in {outcome.steps} steps: {outcome.stop_reason}")
        finally:
            await rt.aclose()

    try:
        anyio.run(go)
    finally:
        if writer:
            writer.close()


TASK = (
    "Checkout latency is spiking. Find the active alert, look up who is on call for the "
    "payments service, page them with the alert summary, and post an incident note in "
    "the #incidents Slack channel."
)
