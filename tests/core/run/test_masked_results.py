"""A secret the runtime knows never reaches the model: not in a tool's result, not in a
tool's error, not in a plugin's error, in any encoding ``Secrets`` knows."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from greenroom import Plugin, RunContext, ToolCall, ToolResult, hookimpl, tool

pytestmark = pytest.mark.anyio

TOKEN = "ghp_not-a-real-token-1234"


@tool
def leaky(mode: str) -> str:
    """Say too much."""
    if mode == "raise":
        raise RuntimeError(f"auth failed with {TOKEN}")
    if mode == "basic":
        return "Authorization: Basic " + base64.b64encode(f"bot:{TOKEN}".encode()).decode()
    return f"the token is {TOKEN}"


class Tattles(Plugin):
    name = "tattles"

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        if call.arguments and call.arguments.get("mode") == "plugin":
            raise ValueError(f"could not bill with {TOKEN}")


@pytest.mark.parametrize("mode", ["say", "raise", "basic", "plugin"])
async def test_a_known_secret_is_masked_in_what_the_model_reads(make_runtime, mode: str) -> None:
    rt = make_runtime(
        [{"tool_calls": [{"name": "leaky", "arguments": {"mode": mode}}]}, {"text": "done"}],
        tools=[leaky],
        plugins=[Tattles()],
    )
    rt.secrets.add(TOKEN)
    rt.secrets.add_pair("bot", TOKEN)
    session = rt.session()
    await session.run("go")
    (result,) = [m for m in session.messages if m.role == "tool"]
    encoded = base64.b64encode(f"bot:{TOKEN}".encode()).decode()
    assert TOKEN not in result.content and encoded not in result.content
    assert "***" in result.content


@tool
def structured_leak() -> Any:
    """Return a structured result that quotes the token."""
    from greenroom import ToolResult

    return ToolResult("fetched", structured={"echo_header": f"Bearer {TOKEN}", "items": [TOKEN]})


async def test_a_known_secret_is_masked_in_structured_results_and_in_every_event(make_runtime) -> None:
    rt = make_runtime(
        [
            {"tool_calls": [{"name": "structured_leak", "arguments": {}}]},
            {"tool_calls": [{"name": "leaky", "arguments": {"mode": "plugin"}}]},
            {"text": "done"},
        ],
        tools=[structured_leak, leaky],
        plugins=[Tattles()],
    )
    rt.secrets.add(TOKEN)
    seen: list[Any] = []
    rt.events.subscribe(seen.append)
    session = rt.session()
    await session.run("go")
    assert TOKEN not in repr([m.content for m in session.messages])
    for event in seen:  # the trace, the live view and observers read these
        assert TOKEN not in json.dumps(event.to_json(), default=str)
    assert any(e.kind == "error" and "***" in e.message for e in seen)


async def test_a_known_secret_in_call_arguments_is_masked_in_every_event(make_runtime) -> None:
    # the model pastes the token into a call: observers (the trace, tracing plugins) get it masked
    rt = make_runtime(
        [{"tool_calls": [{"name": "leaky", "arguments": {"mode": f"say {TOKEN}"}}]}, {"text": "done"}],
        tools=[leaky],
    )
    rt.secrets.add(TOKEN)
    seen: list[Any] = []
    rt.events.subscribe(seen.append)
    await rt.session().run("go")
    dumped = json.dumps([e.to_json() for e in seen])
    assert TOKEN not in dumped
    (executed,) = [e for e in seen if e.kind == "tool_result"]
    assert executed.arguments == {"mode": "say ***"}
    (asked,) = [e for e in seen if e.kind == "response" and e.tool_calls]
    assert asked.tool_calls[0]["arguments"] == {"mode": "say ***"}
