"""``greenroom demo``: the offline showcase, built from the config in ``greenroom/demo_agent``.

An on-call agent with 191 tools handles an incident with the scripted planner model. The
demo prints what the model saw at each step (exact o200k tokens, against sending every
schema), the searches and calls, and a summary. Run it twice: with the priors plugin
installed, the second run starts the tools it learned it needs eager and searches less.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import anyio
import attrs
from rich.console import Console
from rich.table import Table

from greenroom import events as ev
from greenroom.cli.live import LiveView
from greenroom.compose import build_runtime, load_runtime_config, plugin_configs
from greenroom.config import ConfigError
from greenroom.storage import state_dir
from greenroom.tokens import count_tokens, tool_tokens

DEMO_DIR = Path(__file__).resolve().parent / "demo_agent"

FOLLOW_UP = "Keep watching the checkout alert for a few minutes and tell me when it clears."

TASK = (
    "Checkout latency is spiking. Find the active alert, look up who is on call for the "
    "payments service, page them with the alert summary, and post an incident note in "
    "the #incidents Slack channel."
)


@attrs.define
class StepTokens:
    step: int
    system: int
    tools: int
    messages: int
    tool_count: int
    prefix: str


class Recorder:
    """Collects what the summary needs from the event stream."""

    def __init__(self) -> None:
        self.steps: list[StepTokens] = []
        self.searches = 0
        self.calls: list[str] = []
        self.deferred: list[tuple[int, str, str]] = []

    def __call__(self, event: ev.Event) -> None:
        if isinstance(event, ev.RequestSent):
            self.steps.append(
                StepTokens(
                    len(self.steps) + 1,
                    event.system_tokens,
                    event.tools_tokens,
                    event.messages_tokens,
                    len(event.tool_names),
                    event.prefix_hash,
                )
            )
        elif event.kind == "defer":
            self.deferred.append((getattr(event, "step", 0), getattr(event, "tool", ""), getattr(event, "reason", "")))
        elif event.kind == "search":
            self.searches += 1
        elif isinstance(event, ev.ToolExecuted) and not event.is_error and event.tool != "ToolSearch":
            self.calls.append(event.tool)


def demo_config() -> Path:
    config = DEMO_DIR / "demo.toml"
    if not config.exists():
        raise ConfigError(f"the demo files are not here ({DEMO_DIR}); run the demo from a greenroom checkout")
    return config


def run_demo(
    console: Console, *, strategy: str = "dispatch", fresh: bool = False, trace: Path | None = None
) -> dict[str, Any]:
    """Run the demo once and print it; returns the numbers it printed (for tests)."""
    if strategy not in ("dispatch", "inject"):
        raise ConfigError(f"--strategy must be dispatch or inject, not {strategy!r}")
    config = demo_config()
    home = demo_home()
    if fresh and home.exists():
        shutil.rmtree(home)
        console.print(f"[dim]forgot what earlier demo runs learned ({home})[/]")
    home.mkdir(parents=True, exist_ok=True)
    cfg, records = load_runtime_config(config)
    configs = plugin_configs(cfg, records)
    deferred = configs.get("deferred-tools")
    if deferred is not None:
        configs["deferred-tools"] = attrs.evolve(deferred, strategy=strategy)
    priors = configs.get("priors-persistence")
    if priors is not None:
        # what the demo learns lives in its own file, which --fresh deletes
        configs["priors-persistence"] = attrs.evolve(priors, store=f"sqlite:///{home / 'priors.sqlite3'}")
    bus = ev.EventBus()
    recorder = Recorder()
    bus.subscribe(recorder)
    bus.subscribe(LiveView(console))
    writer = ev.TraceWriter(trace) if trace else None
    if writer:
        bus.subscribe(writer)
    rt = build_runtime(config, events=bus, records=records, overrides=configs)
    catalog_tokens = sum(tool_tokens(d) for d in rt.tools.descriptors() if d.name not in _PLUGIN_TOOLS)
    base_system = count_tokens(rt.agent.system_prompt)
    console.rule(f"[bold]greenroom demo[/] · {len(rt.user_tool_names)} tools · strategy {strategy}")
    console.print(f"[bold]task:[/] {TASK}\n", highlight=False)

    async def go() -> Any:
        session = rt.session()
        try:
            outcome = await session.run(TASK)
            if strategy == "inject":
                # a follow-up in the same session, so retention has idle tools to act on
                console.print(f"\n[bold]follow-up:[/] {FOLLOW_UP}\n", highlight=False)
                outcome = await session.run(FOLLOW_UP)
        finally:
            await rt.aclose()
        return session, outcome

    try:
        session, outcome = anyio.run(go)
    finally:
        if writer:
            writer.close()
    return _summary(console, rt, session, outcome, recorder, catalog_tokens, base_system)


_PLUGIN_TOOLS = ("ToolSearch", "deferred_tool_call", "load_tools")


def demo_home() -> Path:
    """Where the demo keeps what it learns (its priors), apart from real agents."""
    return state_dir() / "demo"


def _summary(
    console: Console, rt: Any, session: Any, outcome: Any, rec: Recorder, catalog_tokens: int, base_system: int
) -> dict[str, Any]:
    table = Table(title="what the model saw, step by step (exact o200k tokens)")
    for col in ("step", "tools sent", "tools+system", "messages", "sent", "all schemas sent", "saved"):
        table.add_column(col, justify="right")
    total_sent = total_eager = 0
    for s in rec.steps:
        sent = s.system + s.tools + s.messages
        eager = catalog_tokens + base_system + s.messages
        total_sent += sent
        total_eager += eager
        table.add_row(
            str(s.step),
            str(s.tool_count),
            f"{s.system + s.tools:,}",
            f"{s.messages:,}",
            f"{sent:,}",
            f"{eager:,}",
            f"{1 - sent / eager:.0%}",
        )
    table.add_row(
        "[bold]all[/]",
        "",
        "",
        "",
        f"[bold]{total_sent:,}[/]",
        f"[bold]{total_eager:,}[/]",
        f"[bold]{1 - total_sent / max(total_eager, 1):.0%}[/]",
    )
    console.print()
    console.print(table)
    prefixes = {s.prefix for s in rec.steps}
    console.print(
        f"cacheable prefix (tools + system): {len(prefixes)} distinct hash(es) over {len(rec.steps)} "
        f"steps{' - byte-identical, the prompt cache keeps working' if len(prefixes) == 1 else ''}"
    )
    console.print(f"searches: {rec.searches} · tool calls: {len(rec.calls)} · outcome: {outcome.stop_reason}")
    if rec.deferred:
        console.print("[bold]retention re-deferred idle tools[/] (their schemas leave the tools array):")
        for step, name, reason in rec.deferred:
            console.print(f"  step {step}: {name} ({reason})", highlight=False)
    snapshot = session.last_snapshot
    learned = []
    for value in snapshot.values() if snapshot is not None else []:
        modes = getattr(value, "modes", None)
        if isinstance(modes, dict):
            learned = [(n, p.reason) for n, p in modes.items() if str(p.reason).startswith("prior")]
    if learned:
        console.print("[bold]started eager from learned priors[/] (so no search was needed):")
        for name, reason in learned:
            console.print(f"  {name}: {reason}", highlight=False)
    elif "priors-persistence" in {n for n, _ in rt.host.pm.list_name_plugin()}:
        console.print("[dim]run the demo again: the agent has learned which tools it uses and will start them eager[/]")
    return {
        "steps": len(rec.steps),
        "searches": rec.searches,
        "calls": rec.calls,
        "sent": total_sent,
        "all_eager": total_eager,
        "prefixes": len(prefixes),
        "learned": learned,
        "stop_reason": outcome.stop_reason,
        "redeferred": [name for _, name, _ in rec.deferred],
    }
