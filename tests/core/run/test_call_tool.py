"""``RunContext.call_tool``: a plugin's tool calls tools of its run, and each of those calls
goes as the model's would: resolve, validation, the gates, AfterToolExecute, usage, events."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenroom import (
    Decision,
    Plugin,
    RunContext,
    ToolCall,
    ToolCallContext,
    ToolDescriptor,
    ToolResult,
    hookimpl,
    tool,
)
from greenroom import events as ev

pytestmark = pytest.mark.anyio


@tool
def double(n: int) -> int:
    """Double a number."""
    return 2 * n


@tool
def secret(n: int) -> int:
    """A tool this agent may not use."""
    return n


@tool(name="relay", description="Call each named tool with n and report the results.")
async def relay(calls: list[dict[str, Any]], ctx: ToolCallContext) -> list[Any]:
    assert ctx.run is not None
    out = []
    for c in calls:
        result = await ctx.run.call_tool(c["name"], c.get("arguments"))
        out.append({"error": result.is_error, "content": result.content, "structured": result.structured})
    return out


class Gatekeeper(Plugin):
    """Contributes ``relay``, hides ``secret``, answers ``double(7)`` itself, and watches."""

    name = "gatekeeper"

    def __init__(self) -> None:
        super().__init__()
        self.after: list[str] = []
        self.used: dict[str, int] = {}

    @hookimpl
    def greenroom_tools(self, tools: Any) -> list[Any]:
        return [relay]

    @hookimpl
    def greenroom_hidden_tools(self, ctx: RunContext, tools: Any) -> list[str]:
        return ["secret"]

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: RunContext, call: ToolCall, tool: ToolDescriptor) -> Decision | None:
        if call.name == "double" and (call.arguments or {}).get("n") == 7:
            return Decision.answer("the gate says 14")
        return None

    @hookimpl
    def greenroom_run_end(self, ctx: RunContext) -> None:
        self.used = ctx.usage.counts()

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        self.after.append(call.name)


async def test_a_plugin_tool_calls_tools_as_the_model_would(make_runtime) -> None:
    calls = [
        {"name": "double", "arguments": {"n": 3}},
        {"name": "double", "arguments": {"n": 7}},
        {"name": "double", "arguments": {"n": "three"}},
        {"name": "double", "arguments": ["not", "an", "object"]},
        {"name": "secret", "arguments": {"n": 1}},
    ]
    turns = [{"tool_calls": [{"name": "relay", "arguments": {"calls": calls}}]}, {"text": "done"}]
    gate = Gatekeeper()
    rt = make_runtime(turns, tools=[double, secret], plugins=[gate])
    events: list[ev.Event] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final"

    relayed = next(m for m in session.messages if m.role == "tool")
    results = json.loads(relayed.content)
    assert results[0] == {"error": False, "content": "6", "structured": 6}
    assert results[1]["content"] == "the gate says 14"  # the gates decide a script's call too
    assert results[2]["error"] and "'three' is not of type 'integer'" in results[2]["content"]
    assert results[3]["error"] and "not a JSON object" in results[3]["content"]
    assert results[4]["error"] and "no tool named 'secret'" in results[4]["content"]  # hidden: unknown here too

    executed = [e for e in events if isinstance(e, ev.ToolExecuted)]
    assert [e.tool for e in executed] == ["double"] * 4 + ["secret", "relay"]  # the calls inside, then relay's own
    assert len({e.call_id for e in executed}) == 6  # each call an id of its own
    rejected = [(e.tool, e.reason) for e in events if isinstance(e, ev.ToolCallRejected)]
    assert rejected == [("double", "invalid_arguments"), ("double", "malformed_arguments"), ("secret", "unknown_tool")]
    assert gate.after == ["double", "double", "relay"]  # AfterToolExecute saw what the gates saw
    assert gate.used == {"relay": 1, "double": 4}  # counted as the run's calls (priors learn from them)
