"""What an evaluated session did, seen from inside the runtime, and the stand-in tools.

``EvalProbe`` is a plugin the eval registers in every arm's runtime. It never changes
what the model sees. It answers calls to tools that have no implementation (catalog
tools) with a stand-in result once the runtime has validated their arguments, and it
records, per run: each request as greenroom counted it (``RequestSent``), each
response's usage as the provider reported it (``ResponseReceived``), the calls that
reached a real tool with valid arguments (BeforeToolExecute sees them after dispatch is
unwrapped and validation passed), the calls refused for bad arguments, and searches.
"""

from __future__ import annotations

import json
from collections.abc import Collection

import attrs

from greenroom import (
    Decision,
    Event,
    Plugin,
    RequestSent,
    ResponseReceived,
    RunContext,
    Scope,
    StateRegistry,
    ToolCall,
    ToolCallRejected,
    ToolDescriptor,
    ToolResult,
    hookimpl,
)
from greenroom_deferred import LOAD_TOOL, SEARCH_TOOL
from greenroom_lab.costing import Request
from greenroom_lab.eval.tasks import Call

STAND_IN_NOTE = "stand-in result: the arguments are valid for this tool's schema"


@attrs.define
class Step:
    """One request and its response's usage (zero when the model reports none)."""

    request: Request
    counted: int
    input_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    output_tokens: int = 0


@attrs.define
class SessionRecord:
    """Everything one run showed the probe."""

    steps: list[Step] = attrs.field(factory=list)
    calls: list[Call] = attrs.field(factory=list)
    searches: int = 0
    group_loads: int = 0
    answer: str = ""
    _blocks: list[int] = attrs.field(factory=list)
    _messages: int = 0

    def add_request(self, run_id: str, event: RequestSent) -> None:
        # messages only ever grow within a run: each request's new messages are one more
        # block, so a provider cache holds every block the previous request had
        self._blocks.append(max(0, event.messages_tokens - self._messages))
        self._messages = event.messages_tokens
        request = Request(
            prefix_hash=event.prefix_hash,
            prefix_tokens=event.system_tokens + event.tools_tokens,
            message_tokens=tuple(self._blocks),
            message_ids=tuple(f"{run_id}:{i}" for i in range(len(self._blocks))),
        )
        self.steps.append(Step(request, event.total_tokens))

    def add_response(self, event: ResponseReceived) -> None:
        if not self.steps:
            return
        step = self.steps[-1]
        step.input_tokens = event.input_tokens
        step.cached_input_tokens = event.cached_input_tokens
        step.cache_write_tokens = event.cache_write_tokens
        step.output_tokens = event.output_tokens
        step.request = attrs.evolve(step.request, output_tokens=event.output_tokens)
        names = [c.get("name") for c in event.tool_calls]
        self.searches += names.count(SEARCH_TOOL)
        self.group_loads += names.count(LOAD_TOOL)
        if not event.tool_calls:
            self.answer = event.text

    @property
    def input_tokens(self) -> int:
        """Input tokens as the provider counted them, or as greenroom counted the
        requests when the model reports no usage (the simulated agent)."""
        return sum(s.input_tokens or s.counted for s in self.steps)


class EvalProbe(Plugin):
    """Stand-in answers for catalog tools, and a record of every run (see the module),
    kept in the run's own state (``ctx.state[SessionRecord]``), never on the probe."""

    name = "eval-probe"
    nonblocking = True  # every hook is a few appends: on the event loop, no worker thread

    def __init__(self, stand_ins: Collection[str] = ()) -> None:
        super().__init__()
        self.stand_ins = frozenset(stand_ins)

    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(SessionRecord, Scope.RUN, owner=self.name)

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: RunContext, call: ToolCall, tool: ToolDescriptor) -> Decision | None:
        if tool.name not in (SEARCH_TOOL, LOAD_TOOL):
            ctx.state[SessionRecord].calls.append(Call(tool.name, dict(call.arguments or {}), valid=True))
        if tool.name in self.stand_ins:
            return Decision.answer(ToolResult(json.dumps({"ok": True, "tool": tool.name, "note": STAND_IN_NOTE})))
        return None

    @hookimpl
    def greenroom_event(self, ctx: RunContext | None, event: Event) -> None:
        if ctx is None:
            return
        if isinstance(event, RequestSent):
            ctx.state[SessionRecord].add_request(ctx.run_id, event)
        elif isinstance(event, ResponseReceived):
            ctx.state[SessionRecord].add_response(event)
        elif isinstance(event, ToolCallRejected):
            ctx.state[SessionRecord].calls.append(Call(event.tool, {}, valid=False))
