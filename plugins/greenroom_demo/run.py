"""Running the demo once: its state folder, the config overlay that carries this run's
choices, the runtime built from it, and the session driven through the task.

The demo is wired by config only: it writes a small TOML file into its state folder that
extends the packaged ``agent/demo.toml`` and sets the strategy and where learned priors
are kept, then builds the runtime from that file like any user's agent.
"""

from __future__ import annotations

import enum
import json
import shutil
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.text import Text

from greenroom import ConfigError, EventBus, RunOutcome, Session, TraceWriter, build_runtime, count_tokens
from greenroom.kit import LiveView, state_dir, tool_tokens
from greenroom_demo.agent.policy import FOLLOW_UP
from greenroom_demo.record import PlacementProbe, Recorder
from greenroom_demo.summary import Baseline, DemoResult, print_state, print_summary

AGENT_CONFIG = Path(__file__).resolve().parent / "agent" / "demo.toml"

TASK = (
    "Checkout latency is spiking. Find the active alert, look up who is on call for the "
    "payments service, page them with the alert summary, and post an incident note in "
    "the #incidents Slack channel."
)

MODEL_NOTE = "a scripted planner, not an LLM (offline, no API key)"

# The overlay names other plugins' config sections, as any user's config may; the store
# path is relative to the overlay's own folder, so what the demo learns stays there.
OVERLAY = """\
# Written by `greenroom demo` before each run: the packaged demo agent with this run's
# choices. What the demo learns is kept in this folder; `greenroom demo --fresh` deletes it.
extends = {base}

[plugins.deferred-tools]
strategy = {strategy}

[plugins.priors-persistence]
store = "sqlite://priors.sqlite3"
"""


class Strategy(enum.Enum):
    """How the demo's deferred tools reach the model."""

    DISPATCH = "dispatch"
    INJECT = "inject"

    @classmethod
    def parse(cls, value: Strategy | str) -> Strategy:
        try:
            return cls(value)
        except ValueError:
            choices = " or ".join(s.value for s in cls)
            raise ConfigError(f"--strategy must be {choices}, not {value!r}") from None

    @property
    def follow_up(self) -> str | None:
        """A second input in the same session: it leaves the tools the task promoted idle,
        so inject's retention has something to re-defer."""
        return FOLLOW_UP if self is Strategy.INJECT else None


def demo_home() -> Path:
    """Where the demo keeps what it learns (its priors), apart from real agents."""
    return state_dir() / "demo"


def agent_config() -> Path:
    if not AGENT_CONFIG.exists():
        raise ConfigError(f"the demo agent's files are missing ({AGENT_CONFIG}); reinstall greenroom")
    return AGENT_CONFIG


def write_overlay(home: Path, strategy: Strategy) -> Path:
    """The config this run is built from: the packaged agent plus this run's choices."""
    home.mkdir(parents=True, exist_ok=True)
    overlay = home / "demo.toml"
    # JSON strings (non-ASCII left as is) are valid TOML basic strings, escapes included
    text = OVERLAY.format(
        base=json.dumps(str(agent_config()), ensure_ascii=False),
        strategy=json.dumps(strategy.value),
    )
    overlay.write_text(text, encoding="utf-8")
    return overlay


def run_demo(
    console: Console,
    *,
    strategy: Strategy | str = Strategy.DISPATCH,
    fresh: bool = False,
    trace: Path | None = None,
    stream: bool = True,
) -> dict[str, Any]:
    """Run the demo once and print it; returns the numbers it printed (for tests).
    ``stream``: show the model's text as it arrives (its scripted planner streams)."""
    chosen = Strategy.parse(strategy)
    home = demo_home()
    if fresh and home.exists():
        shutil.rmtree(home)
        console.print(Text(f"forgot what earlier demo runs learned ({home})", style="dim"), highlight=False)
    config = write_overlay(home, chosen)
    bus = EventBus()
    recorder = Recorder()
    probe = PlacementProbe()
    bus.subscribe(recorder)
    view = LiveView(console)
    bus.subscribe(view)
    on_text = view.text if stream else None
    writer = TraceWriter(trace) if trace else None
    if writer:
        bus.subscribe(writer)
    try:
        rt = build_runtime(config, events=bus, extra_plugins=[probe])
        user_tools = rt.user_tool_names
        baseline = Baseline(
            catalog_tokens=sum(tool_tokens(d) for d in rt.tools.descriptors() if d.name in user_tools),
            system_tokens=count_tokens(rt.agent.system_prompt),
            plugin_tools=rt.plugin_tool_names,
        )
        console.rule(f"[bold]greenroom demo[/] · {len(user_tools)} tools · strategy {chosen.value}")
        console.print(f"[bold]task:[/] {TASK}", highlight=False)
        console.print(f"[bold]model:[/] {MODEL_NOTE}\n", highlight=False)

        async def go() -> tuple[Session, RunOutcome]:
            session = rt.session()
            try:
                outcome = await session.run(TASK, on_text=on_text)
                if chosen.follow_up:
                    console.print(f"\n[bold]follow-up:[/] {chosen.follow_up}\n", highlight=False)
                    outcome = await session.run(chosen.follow_up, on_text=on_text)
            finally:
                await rt.aclose()
            return session, outcome

        session, outcome = anyio.run(go)
    finally:
        if writer:
            writer.close()
    result = DemoResult.collect(recorder, probe, baseline, session, outcome)
    print_summary(console, result)
    print_state(console, home, config, rt.agent.id)
    return result.as_dict()
