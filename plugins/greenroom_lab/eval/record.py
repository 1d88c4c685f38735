"""What an evaluated session did, seen from inside the runtime, and the stand-in tools.

``EvalProbe`` is a plugin the eval registers in every arm's runtime. It never changes
what the model sees. It answers calls to tools that have no implementation (catalog
tools) with a stand-in result once the runtime has validated their arguments, and it
records, per run: each request as greenroom counted it (``RequestSent``), each
response's usage as the provider reported it (``ResponseReceived``), the calls that
reached a real tool with valid arguments (BeforeToolExecute sees them after dispatch is
unwrapped and validation passed) with their results (AfterToolExecute), the calls
refused for bad arguments, and searches with their queries. ``requests_of`` turns a
session's steps (its runs' one after another) into the blocks a prompt cache sees.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence

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


RESULT_CHARS = 2_000
"""Characters of a call's result kept for checkers and ``sessions.jsonl``."""


@attrs.define
class Step:
    """One request as greenroom counted it, and its response's usage (zero when the model
    reports none)."""

    prefix_hash: str
    prefix_tokens: int
    messages_tokens: int
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
    queries: list[str] = attrs.field(factory=list)
    """What each search that ran asked (``select:`` names, a group, or keywords)."""
    group_loads: int = 0
    answer: str = ""
    _open: dict[str, int] = attrs.field(factory=dict)
    """Call id -> its place in ``calls``, until its result comes."""

    def add_request(self, event: RequestSent) -> None:
        prefix = event.system_tokens + event.tools_tokens
        self.steps.append(Step(event.prefix_hash, prefix, event.messages_tokens, event.total_tokens))

    def add_response(self, event: ResponseReceived) -> None:
        if not self.steps:
            return
        step = self.steps[-1]
        step.input_tokens = event.input_tokens
        step.cached_input_tokens = event.cached_input_tokens
        step.cache_write_tokens = event.cache_write_tokens
        step.output_tokens = event.output_tokens
        names = [c.get("name") for c in event.tool_calls]
        self.searches += names.count(SEARCH_TOOL)
        self.group_loads += names.count(LOAD_TOOL)
        if not event.tool_calls:
            self.answer = event.text

    def add_call(self, call: ToolCall, tool: str) -> None:
        self._open[call.id] = len(self.calls)
        self.calls.append(Call(tool, dict(call.arguments or {}), valid=True))

    def add_result(self, call: ToolCall, result: ToolResult) -> None:
        at = self._open.pop(call.id, None)
        if at is not None:
            text = result.content if len(result.content) <= RESULT_CHARS else result.content[:RESULT_CHARS] + "..."
            self.calls[at] = attrs.evolve(self.calls[at], result=text, is_error=result.is_error)

    @property
    def input_tokens(self) -> int:
        """Input tokens as the provider counted them, or as greenroom counted the
        requests when the model reports no usage (the simulated agent)."""
        return sum(s.input_tokens or s.counted for s in self.steps)


def requests_of(steps: Sequence[Step], key: str) -> list[Request]:
    """A session's requests as a prompt cache sees them: the prefix (tools and system),
    then one block per request's new messages. Messages only grow within a session, so a
    request holds every block of the one before (``key`` names the session's blocks)."""
    out: list[Request] = []
    blocks: list[int] = []
    seen = 0
    for step in steps:
        blocks.append(max(0, step.messages_tokens - seen))
        seen = step.messages_tokens
        out.append(
            Request(
                prefix_hash=step.prefix_hash,
                prefix_tokens=step.prefix_tokens,
                message_tokens=tuple(blocks),
                message_ids=tuple(f"{key}:{i}" for i in range(len(blocks))),
                output_tokens=step.output_tokens,
            )
        )
    return out


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
        record = ctx.state[SessionRecord]
        if tool.name == SEARCH_TOOL:
            record.queries.append(str((call.arguments or {}).get("query", "")))
        elif tool.name != LOAD_TOOL:
            record.add_call(call, tool.name)
        if tool.name in self.stand_ins:
            return Decision.answer(ToolResult(json.dumps({"ok": True, "tool": tool.name, "note": STAND_IN_NOTE})))
        return None

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        ctx.state[SessionRecord].add_result(call, result)

    @hookimpl
    def greenroom_event(self, ctx: RunContext | None, event: Event) -> None:
        if ctx is None:
            return
        if isinstance(event, RequestSent):
            ctx.state[SessionRecord].add_request(event)
        elif isinstance(event, ResponseReceived):
            ctx.state[SessionRecord].add_response(event)
        elif isinstance(event, ToolCallRejected):
            ctx.state[SessionRecord].calls.append(Call(event.tool, {}, valid=False))
