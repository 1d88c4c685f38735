"""What the demo's summary needs from a run: the requests, searches, calls and re-deferrals
seen on the event stream, and where each tool was placed on the first step.

Events of other plugins are recognised by their ``kind`` and read through the generic
``Event.to_json``, so the demo imports no other plugin.
"""

from __future__ import annotations

from typing import Any

import attrs

from greenroom import Event, Plugin, RequestSent, RunContext, ToolExecuted, ToolPlacement, hookimpl

SEARCH_KIND = "search"
DEFER_KIND = "defer"
PRIOR_SOURCE = "prior"  # a ToolPlacement's source when learned priors started the tool eager


@attrs.frozen
class StepTokens:
    """The token counts of one request the model got."""

    step: int
    system: int
    tools: int
    messages: int
    tool_count: int
    prefix: str


@attrs.frozen
class Redeferral:
    """A tool that went idle and left the tools array again."""

    step: int
    tool: str
    reason: str


@attrs.frozen
class LearnedPlacement:
    """A tool that started eager because of what earlier runs learned."""

    tool: str
    why: str


class Recorder:
    """Collects the requests, searches, successful calls and re-deferrals of a session."""

    def __init__(self) -> None:
        self.steps: list[StepTokens] = []
        self.searches = 0
        self.calls: list[str] = []
        self.redeferred: list[Redeferral] = []

    def __call__(self, event: Event) -> None:
        if isinstance(event, RequestSent):
            self.steps.append(
                StepTokens(
                    step=len(self.steps) + 1,
                    system=event.system_tokens,
                    tools=event.tools_tokens,
                    messages=event.messages_tokens,
                    tool_count=len(event.tool_names),
                    prefix=event.prefix_hash,
                )
            )
        elif isinstance(event, ToolExecuted):
            if not event.is_error:
                self.calls.append(event.tool)
        elif event.kind == SEARCH_KIND:
            self.searches += 1
        elif event.kind == DEFER_KIND:
            data = event.to_json()
            step, tool, reason = int(data.get("step", 0)), str(data.get("tool", "")), str(data.get("reason", ""))
            self.redeferred.append(Redeferral(step=step, tool=tool, reason=reason))


class PlacementProbe(Plugin):
    """Asks every plugin, on the session's first step, where it placed each tool
    (``greenroom_inspect_tools``), and keeps the tools learned priors started eager."""

    name = "demo-placements"
    nonblocking = True  # it only reads what the plugins placed

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.learned: list[LearnedPlacement] | None = None

    @hookimpl(trylast=True)  # after the placements of this step are made
    def greenroom_before_inference(self, ctx: RunContext) -> None:
        if self.learned is not None:
            return  # only the first step shows how the session started
        placements: dict[str, ToolPlacement] = {}
        for answer in ctx.call_hook("greenroom_inspect_tools", ctx=ctx):
            for name, placement in answer.items():
                placements.setdefault(name, placement)  # the first answer in hook order wins
        self.learned = [
            LearnedPlacement(tool=name, why=p.detail or p.source)
            for name, p in placements.items()
            if p.source == PRIOR_SOURCE
        ]
