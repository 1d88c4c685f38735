"""A call to an upstream MCP server: ``greenroom_mcp_request`` (any plugin's) puts what it
adds to ``_meta`` on the wire, its failures never fail the call, and the otel plugin's
``tools/call {tool}`` CLIENT span carries the run's trace to a real server that reports
the ``traceparent`` it got."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from opentelemetry.trace import SpanKind

from greenroom import Plugin, hookimpl
from greenroom.config import McpServerConfig
from greenroom.kit import McpRequest
from greenroom.mcp import McpServer

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

META_SERVER = Path(__file__).with_name("meta_server.py")
FIXED = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Stamper(Plugin):
    """Adds a fixed traceparent to every upstream request, and remembers how each ended."""

    name = "stamper"
    nonblocking = True

    def __init__(self, config: object = None) -> None:
        super().__init__(config)
        self.seen: list[tuple[str, str | None, bool]] = []

    @hookimpl
    def greenroom_mcp_request(self, ctx: Any, request: McpRequest) -> Any:
        @contextmanager
        def stamp() -> Iterator[None]:
            request.meta["traceparent"] = FIXED
            yield
            self.seen.append((request.method, request.name, request.is_error))

        return stamp()


class Broken(Plugin):
    """Fails every way a hook of this kind can: raises, or answers nonsense."""

    name = "broken"
    nonblocking = True

    @hookimpl
    def greenroom_mcp_request(self, ctx: Any, request: McpRequest) -> Any:
        if request.call_id and request.call_id.endswith("1"):
            raise RuntimeError("observer down")
        return "not a context manager"


@pytest.fixture
async def meta_server(tmp_path: Path) -> Any:
    server = McpServer(McpServerConfig(name="meta", command=sys.executable, args=(str(META_SERVER),)), tmp_path)
    await server.start()
    try:
        yield server
    finally:
        await server.aclose()


def calls(n: int) -> list[Any]:
    turns: list[Any] = [{"tool_calls": [{"name": "meta__whoami", "arguments": {}}]} for _ in range(n)]
    return [*turns, {"text": "done"}]


async def test_hook_greenroom_mcp_request(make_runtime, meta_server) -> None:
    """What a plugin adds to ``_meta`` reaches the server; a broken observer changes nothing."""
    stamper = Stamper()
    rt = make_runtime(calls(1), tools=meta_server.tools(), plugins=[stamper, Broken()])
    session = rt.session()
    await session.run("who am I")
    (result,) = [m for m in session.messages if m.role == "tool"]
    assert not result.is_error and FIXED in result.content  # the broken observer changed nothing
    assert stamper.seen == [("tools/call", "whoami", False)]


async def test_outside_a_run_nothing_is_asked(meta_server) -> None:
    from greenroom.tools import ToolCallContext

    (tool,) = meta_server.tools()
    result = await tool.execute({}, ToolCallContext(call_id="c", run_id="r", tool_name="meta__whoami"))
    assert result.structured == {"traceparent": None, "tracestate": None}


async def test_the_upstream_call_is_a_client_span_whose_context_the_server_gets(
    make_runtime, meta_server, traced
) -> None:
    t = traced()
    rt = make_runtime(calls(2), tools=meta_server.tools(), plugins=[t.plugin], id="tracer")
    session = rt.session()
    await session.run("who am I")
    spans = t.finished()
    (root,) = t.named("invoke_agent tracer")
    executes = [s for s in spans if s.name == "execute_tool meta__whoami"]
    clients = [s for s in spans if s.name == "tools/call whoami"]
    assert len(executes) == len(clients) == 2
    got = [m.content for m in session.messages if m.role == "tool"]
    for execute, client in zip(executes, clients, strict=True):
        assert client.kind is SpanKind.CLIENT and client.parent.span_id == execute.context.span_id
        assert client.attributes["mcp.method.name"] == "tools/call"
        assert client.attributes["gen_ai.tool.name"] == "whoami"
        assert client.attributes["greenroom.mcp.server"] == "meta"
        assert client.context.trace_id == root.context.trace_id
        sent = f"00-{client.context.trace_id:032x}-{client.context.span_id:016x}-"
        assert any(sent in text for text in got), got  # the server got this very span's context


class Doorman(Plugin):
    """Sees every request a gateway client sends, with its ``_meta``, and how it ended."""

    name = "doorman"
    nonblocking = True

    def __init__(self, config: object = None) -> None:
        super().__init__(config)
        self.seen: list[tuple[str, str | None, Any, bool]] = []

    @hookimpl
    def greenroom_serve_request(self, request: McpRequest) -> Any:
        if request.method == "tools/list":
            raise RuntimeError("observer down")  # contained: the listing still answers

        @contextmanager
        def watch() -> Iterator[None]:
            yield
            self.seen.append((request.method, request.name, request.meta.get("traceparent"), request.is_error))

        return watch()


async def test_hook_greenroom_serve_request(make_runtime) -> None:
    """A gateway client's requests are observed with their ``_meta`` and how they ended."""
    from mcp import Client

    from greenroom import tool
    from greenroom_gateway import GatewayPlugin  # declares the hook
    from greenroom_gateway.gateway import Gateway

    @tool
    def echo(text: str) -> str:
        """Echo.

        Args:
            text: Text.
        """
        return text

    doorman = Doorman()
    gateway = Gateway(make_runtime([], tools=[echo], plugins=[GatewayPlugin(), doorman]))
    await gateway.prepare()
    try:
        async with Client(gateway.server) as client:
            assert [t.name for t in (await client.list_tools()).tools] == ["echo"]
            ok = await client.call_tool("echo", {"text": "hi"}, meta={"traceparent": FIXED})
            bad = await client.call_tool("missing", {})
    finally:
        await gateway.aclose()
    assert not ok.is_error and bad.is_error
    assert doorman.seen == [("tools/call", "echo", FIXED, False), ("tools/call", "missing", None, True)]
