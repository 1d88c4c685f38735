"""A secret the runtime knows never reaches the model: not in a tool's result, not in a
tool's error, not in a plugin's error, in any encoding ``Secrets`` knows."""

from __future__ import annotations

import base64

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
