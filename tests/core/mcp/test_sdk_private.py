"""The MCP SDK's private parts greenroom reads (``greenroom.mcp.sdk_private``) are where
it reads them, with the shapes it calls them with: a new SDK that moves one fails here,
by name, rather than as a server whose faulty listing costs all its tools. (That listing
itself is tested against a server that writes its own lines: test_unusable_schema.py.)"""

from __future__ import annotations

import inspect
from typing import Any

import pytest

pytest.importorskip("mcp")

import mcp_types as t
from mcp import Client, ClientSession
from mcp.server.lowlevel import Server

from greenroom.mcp.sdk_private import absorb_tools, raw_request

pytestmark = pytest.mark.anyio

OUT = {"type": "object", "properties": {"n": {"type": "integer"}}}


def _server() -> Server[Any]:
    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=[t.Tool(name="good", input_schema={"type": "object"}, output_schema=OUT)])

    return Server("listing", on_list_tools=list_tools)


def _parameters(func: Any) -> list[tuple[str, Any]]:
    return [(p.name, p.kind) for p in inspect.signature(func).parameters.values()]


def test_the_private_members_have_the_shapes_greenroom_calls() -> None:
    assert _parameters(ClientSession._absorb_tool_listing) == [
        ("self", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("result", inspect.Parameter.POSITIONAL_OR_KEYWORD),
        ("complete", inspect.Parameter.KEYWORD_ONLY),
    ]
    assert isinstance(inspect.getattr_static(ClientSession, "protocol_version"), property)  # the public twin


async def test_a_live_session_has_them_and_they_do_what_greenroom_needs() -> None:
    async with Client(_server()) as client:
        session = client.session
        stamp = session._stamp
        assert callable(stamp) and len(inspect.signature(stamp).parameters) == 2
        send = session._dispatcher.send_raw_request
        assert [n for n, _ in _parameters(send)][:3] == ["method", "params", "opts"]
        raw = await raw_request(session, t.ListToolsRequest())
        assert isinstance(raw, dict) and [tool["name"] for tool in raw["tools"]] == ["good"]  # JSON, unchecked
        assert session._tool_output_schemas == {}  # nothing absorbed yet: the SDK did not take the page
        absorb_tools(session, t.ListToolsResult.model_validate(raw, by_name=False), complete=True)
        assert session._tool_output_schemas == {"good": OUT}  # kept for checking the tool's results
