"""The demo's summary: what the model saw step by step against sending every schema, the
prompt-cache prefix, searches and calls, re-deferrals, what learned priors changed, and
where what it learned is kept. Everything fits 80 columns."""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any

import attrs
from rich.console import Console
from rich.table import Table
from rich.text import Text

from greenroom import RunOutcome, Session, ToolPriors
from greenroom_demo.record import LearnedPlacement, PlacementProbe, Recorder, Redeferral, StepTokens


@attrs.frozen
class Baseline:
    """What every request would cost with every schema sent, and which tools are not the agent's."""

    catalog_tokens: int
    system_tokens: int
    plugin_tools: frozenset[str]


@attrs.frozen
class DemoResult:
    """The numbers one demo session printed."""

    steps: list[StepTokens]
    baseline: Baseline
    searches: int
    calls: list[str]
    redeferred: list[Redeferral]
    learned: list[LearnedPlacement]
    priors_kept: bool
    stop_reason: str
    error: str | None = None

    @classmethod
    def collect(
        cls, rec: Recorder, probe: PlacementProbe, baseline: Baseline, session: Session, outcome: RunOutcome
    ) -> DemoResult:
        snapshot = session.snapshot()
        priors = snapshot[ToolPriors] if ToolPriors in snapshot else None
        return cls(
            steps=list(rec.steps),
            baseline=baseline,
            searches=rec.searches,
            # the agent's own tools: the tools plugins contribute (search, dispatch) are not the task
            calls=[name for name in rec.calls if name not in baseline.plugin_tools],
            redeferred=list(rec.redeferred),
            learned=list(probe.learned or []),
            priors_kept=bool(priors is not None and priors.loaded and priors.p),
            stop_reason=outcome.stop_reason,
            error=outcome.error,
        )

    def eager_tokens(self, step: StepTokens) -> int:
        return self.baseline.catalog_tokens + self.baseline.system_tokens + step.messages

    @property
    def sent(self) -> int:
        return sum(s.system + s.tools + s.messages for s in self.steps)

    @property
    def all_eager(self) -> int:
        return sum(self.eager_tokens(s) for s in self.steps)

    @property
    def prefixes(self) -> int:
        return len({s.prefix for s in self.steps})

    def as_dict(self) -> dict[str, Any]:
        return {
            "steps": len(self.steps),
            "searches": self.searches,
            "calls": self.calls,
            "sent": self.sent,
            "all_eager": self.all_eager,
            "prefixes": self.prefixes,
            "learned": [(p.tool, p.why) for p in self.learned],
            "stop_reason": self.stop_reason,
            "redeferred": [r.tool for r in self.redeferred],
        }


def steps_table(result: DemoResult) -> Table:
    # short headers: the table fits 80 columns with no number cut
    table = Table(title="what the model saw per step (o200k tokens)")
    for col in ("step", "tools", "tools+sys", "messages", "sent", "all eager", "saved"):
        table.add_column(col, justify="right")
    for s in result.steps:
        sent = s.system + s.tools + s.messages
        eager = result.eager_tokens(s)
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
        f"[bold]{result.sent:,}[/]",
        f"[bold]{result.all_eager:,}[/]",
        f"[bold]{1 - result.sent / max(result.all_eager, 1):.0%}[/]",
    )
    table.caption = "all eager: every schema sent on every step"
    return table


def line(console: Console, text: str, style: str = "") -> None:
    """One line of text that is not markup, cut at the console's width rather than wrapped."""
    console.print(Text(text, style=style), highlight=False, no_wrap=True, overflow="ellipsis")


def print_summary(console: Console, result: DemoResult) -> None:
    console.print()
    console.print(steps_table(result))
    hashes = "1 hash" if result.prefixes == 1 else f"{result.prefixes} hashes"
    identical = ", byte-identical" if result.prefixes == 1 else ""
    line(console, f"cache prefix (tools + system): {hashes} over {len(result.steps)} steps{identical}")
    error = f" ({result.error})" if result.error else ""
    line(
        console, f"searches: {result.searches} · tool calls: {len(result.calls)} · outcome: {result.stop_reason}{error}"
    )
    if result.redeferred:
        line(console, "retention re-deferred idle tools (their schemas leave the tools array):", "bold")
        for r in result.redeferred:
            line(console, f"  step {r.step}: {r.tool} ({r.reason})")
    if result.learned:
        line(console, "started eager from learned priors (so no search was needed):", "bold")
        for p in result.learned:
            line(console, f"  {p.tool}: {p.why}")
    elif result.priors_kept:
        line(console, "run the demo again: it learned which tools it uses and starts them eager", "dim")


def print_state(console: Console, home: Path, overlay: Path, agent: str) -> None:
    """Where the demo keeps what it learns, who shares it, and the command that shows it."""
    console.print()
    console.print(
        Text(
            f"What the demo learned is kept per OS user, in {home}: the next run on this "
            "account (anyone's first run included) starts from it; --fresh forgets it. See it with:"
        ),
        highlight=False,
    )
    # a command is printed whole on one line, never wrapped or cut, so it can be pasted
    command = f"greenroom priors show {shlex.quote(agent)} --config {shlex.quote(str(overlay))}"
    console.print(Text(f"  {command}", style="bold"), highlight=False, soft_wrap=True)
