"""The demo's summary: what the model saw step by step against sending every schema, the
prompt-cache prefix, searches and calls, re-deferrals, and what learned priors changed."""

from __future__ import annotations

from typing import Any

import attrs
from rich.console import Console
from rich.table import Table

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
    table = Table(title="what the model saw, step by step (exact o200k tokens)")
    for col in ("step", "tools sent", "tools+system", "messages", "sent", "all schemas sent", "saved"):
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
    return table


def print_summary(console: Console, result: DemoResult) -> None:
    console.print()
    console.print(steps_table(result))
    identical = " - byte-identical, the prompt cache keeps working" if result.prefixes == 1 else ""
    console.print(
        f"cacheable prefix (tools + system): {result.prefixes} distinct hash(es) over {len(result.steps)} "
        f"steps{identical}"
    )
    error = f" ({result.error})" if result.error else ""
    console.print(
        f"searches: {result.searches} · tool calls: {len(result.calls)} · outcome: {result.stop_reason}{error}",
        highlight=False,
    )
    if result.redeferred:
        console.print("[bold]retention re-deferred idle tools[/] (their schemas leave the tools array):")
        for r in result.redeferred:
            console.print(f"  step {r.step}: {r.tool} ({r.reason})", highlight=False)
    if result.learned:
        console.print("[bold]started eager from learned priors[/] (so no search was needed):")
        for p in result.learned:
            console.print(f"  {p.tool}: {p.why}", highlight=False)
    elif result.priors_kept:
        console.print("[dim]run the demo again: the agent has learned which tools it uses and will start them eager[/]")
