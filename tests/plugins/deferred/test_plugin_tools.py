"""ToolSearch, load_tools and deferred_tool_call are tools: they run after the gates like
any tool, a gate that allows everything never breaks them, and a gate can block them."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenroom import (
    AgentConfig,
    Decision,
    Plugin,
    Runtime,
    ToolCall,
    ToolCallContext,
    ToolDescriptor,
    ToolGroup,
    hookimpl,
    make_plugin_host,
    tool,
)
from greenroom import events as ev
from greenroom.providers.scripted import ScriptedModel
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.events import SearchPerformed

PARAMS = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": False}


def make_tools() -> list[Any]:
    out = []
    for name in ("weather_get", "email_send", "calendar_list"):

        def impl(id: str, _n: str = name) -> str:
            return f"{_n}:{id}"

        t = tool(impl, name=name, description=f"{name.replace('_', ' ').capitalize()} for the account.")
        t._descriptor = ToolDescriptor(name, t.descriptor.description, PARAMS)
        out.append(t)
    return out


def billing_group() -> ToolGroup:
    async def loader() -> list[Any]:
        def refund(id: str) -> str:
            return f"refunded {id}"

        t = tool(refund, name="billing_refund", description="Refund a billing record.")
        t._descriptor = ToolDescriptor("billing_refund", t.descriptor.description, PARAMS)
        return [t]

    known = [ToolDescriptor("billing_refund", "Refund a billing record.", PARAMS)]
    return ToolGroup("billing", "Billing", "Refunds.", loader, known=known)


class AllowAll(Plugin):
    """A policy plugin whose gate allows every call it sees."""

    name = "allow-all"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: ToolDescriptor) -> Decision:
        self.seen.append(call.name)
        return Decision.allow()


class BlockSearch(Plugin):
    name = "no-search"

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: ToolDescriptor) -> Decision | None:
        return Decision.block("searching is off") if call.name == "ToolSearch" else None


def call(name: str, **args: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": name, "arguments": args}]}


def runtime(turns: list[dict[str, Any]], *gates: Plugin) -> tuple[Any, list[ev.Event]]:
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True))
    rt = Runtime(
        model=ScriptedModel(turns),
        tools=make_tools(),
        groups=[billing_group()],
        host=make_plugin_host(records=[], extra=[*gates, plugin]),
        agent=AgentConfig(max_steps=8),
    )
    events: list[ev.Event] = []
    rt.events.subscribe(events.append)
    return rt, events


def results(session: Any) -> list[Any]:
    return [m for m in session.messages if m.role == "tool"]


@pytest.mark.anyio
async def test_a_gate_that_allows_everything_does_not_break_the_plugin_tools() -> None:
    gate = AllowAll()
    turns = [
        call("ToolSearch", query="select:weather_get"),
        call("load_tools", group_id="billing"),
        call("deferred_tool_call", tool_name="weather_get", arguments={"id": "oslo"}),
        {"text": "done"},
    ]
    rt, _ = runtime(turns, gate)
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.text == "done"
    found, loaded, called = results(session)
    assert not found.is_error and '"name": "weather_get"' in found.content
    assert not loaded.is_error and json.loads(loaded.content)["tool_names"] == ["billing_refund"]
    assert called.content == "weather_get:oslo"
    # the gate saw the plugin's tools like any other, and the dispatcher's real target
    assert gate.seen == ["ToolSearch", "load_tools", "weather_get"]
    assert session.state[DeferralState].discovered == ["weather_get", "billing_refund"]


@pytest.mark.anyio
async def test_a_gate_can_block_tool_search() -> None:
    rt, events = runtime([call("ToolSearch", query="weather"), {"text": "ok"}], BlockSearch())
    session = rt.session()
    await session.run("go")
    (blocked,) = results(session)
    assert blocked.is_error and "'ToolSearch' was blocked: searching is off" in blocked.content
    assert not [e for e in events if isinstance(e, SearchPerformed)]  # the search never ran
    assert session.state[DeferralState].discovered == []
    (executed,) = [e for e in events if isinstance(e, ev.ToolExecuted)]
    assert executed.decided_by == "gate"


@pytest.mark.anyio
async def test_a_failing_ranker_fails_one_search_and_the_run_goes_on() -> None:
    class BrokenRanker(Plugin):
        name = "broken-ranker"

        @hookimpl
        def greenroom_rank_tools(self, ctx: Any, query: Any, candidates: Any) -> None:
            raise RuntimeError("index is gone")

    turns = [call("ToolSearch", query="weather"), call("ToolSearch", query="select:email_send"), {"text": "ok"}]
    rt, _ = runtime(turns, BrokenRanker())
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.text == "ok"
    failed, selected = results(session)
    assert failed.is_error and "index is gone" in failed.content
    assert not selected.is_error and '"name": "email_send"' in selected.content  # select needs no ranker


@pytest.mark.anyio
async def test_the_plugin_tools_need_the_run() -> None:
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True))
    search = next(t for t in plugin.greenroom_tools(tools={}, groups={}) if t.descriptor.name == "ToolSearch")
    result = await search.execute({"query": "x"}, ToolCallContext(call_id="c", run_id="r", tool_name="ToolSearch"))
    assert result.is_error and "works only in a run" in result.content
