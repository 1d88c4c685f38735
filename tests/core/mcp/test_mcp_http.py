"""MCP over streamable HTTP, against a server the test starts on loopback."""

from __future__ import annotations

import signal

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from greenroom.config import McpServerConfig
from greenroom.mcp import McpServer, McpToolset
from greenroom.tools import ToolCallContext

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CTX = ToolCallContext(call_id="c1", run_id="r1", tool_name="t")


async def test_http_server_lists_calls_and_sends_headers(tmp_path, http_server) -> None:
    cfg = McpServerConfig(name="calc", url=http_server.url, headers={"X-Greenroom-Test": "hello-header"}, timeout=5)
    toolset = McpToolset([cfg], tmp_path)
    try:
        await toolset.prepare()
        (group,) = toolset.groups()
        assert [d.name for d in group.known] == ["calc__add", "calc__header", "calc__slow"]
        assert group.description == "Arithmetic and diagnostics for greenroom's tests."
        assert group.instructions is not None and "Call add for sums." in group.instructions
        tools = {t.descriptor.name: t for t in await group.load()}
        added = await tools["calc__add"].execute({"a": 2, "b": 40}, CTX)
        assert not added.is_error and added.content == "42" and added.structured == {"result": 42}
        header = await tools["calc__header"].execute({}, CTX)
        assert header.content == "hello-header"
    finally:
        await toolset.aclose()


async def test_a_slow_http_call_times_out_and_the_session_is_kept(tmp_path, http_server) -> None:
    server = McpServer(McpServerConfig(name="calc", url=http_server.url, timeout=0.5), tmp_path)
    try:
        slow = await server.call_tool("slow", {"seconds": 5})
        assert slow.is_error and "did not answer the call to 'slow' within 0.5 s" in slow.content
        fast = await server.call_tool("add", {"a": 1, "b": 1})  # the ping proves it alive: no restart
        assert fast.content == "2" and server.starts == 1
    finally:
        await server.aclose()


async def test_a_crashed_http_server_gives_an_error_then_reconnects(tmp_path, http_server) -> None:
    server = McpServer(McpServerConfig(name="calc", url=http_server.url, timeout=5, connect_timeout=5), tmp_path)
    try:
        assert (await server.call_tool("add", {"a": 1, "b": 2})).content == "3"
        http_server.stop(signal.SIGKILL)
        down = await server.call_tool("add", {"a": 1, "b": 2})
        assert down.is_error and "MCP server 'calc' closed the connection" in down.content
        assert "reconnected on the next call" in down.content
        http_server.start()
        up = await server.call_tool("add", {"a": 2, "b": 2})
        assert up.content == "4", up.content
        assert server.starts == 2
    finally:
        await server.aclose()
