"""One trace from an MCP client, through ``greenroom serve`` (a subprocess, the otel plugin
on, exporting OTLP/HTTP to the tests' receiver), to an upstream server that reports the
``traceparent`` it got: from the client's ``_meta``, and from its HTTP headers. And a
gateway that an MCP client starts over stdio with the bare environment clients give:
its traces and its state go where its config and its flags say."""

from __future__ import annotations

import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
pytest.importorskip("uvicorn", reason="needs uvicorn (the MCP SDK's HTTP server)")

from support.serve_testutil import HttpGateway

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

META_SERVER = Path(__file__).with_name("meta_server.py")
TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CLIENT_SPAN = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE}-{CLIENT_SPAN}-01"


def config(tmp_path: Path, receiver_url: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(
        f"""
[agent]
id = "gw"

[[tools.mcp]]
name = "meta"
command = {sys.executable!r}
args = [{str(META_SERVER)!r}]

[plugins]
enable = ["otel"]
disable = ["deferred-tools"]

[plugins.otel]
endpoint = {receiver_url!r}
service_name = "gateway-under-test"
""",
        encoding="utf-8",
    )
    return path


@asynccontextmanager
async def client(url: str, headers: dict[str, str]) -> AsyncIterator[Any]:
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        yield session


async def test_one_trace_runs_client_gateway_upstream(tmp_path: Path, receiver) -> None:
    gateway = HttpGateway(config(tmp_path, receiver.url))
    try:
        async with client(gateway.url, {}) as session:
            result = await session.call_tool("meta__whoami", {}, meta={"traceparent": TRACEPARENT})
    finally:
        assert gateway.stop() == 0  # a clean stop flushes what was traced
    seen = result.structured_content["traceparent"]

    (server,) = receiver.named("tools/call meta__whoami")
    assert server.kind == 2  # SERVER, continuing the client's span
    assert (server.trace_id, server.parent_id) == (TRACE, CLIENT_SPAN)
    assert server.attributes["mcp.method.name"] == "tools/call" and server.service == "gateway-under-test"
    (execute,) = receiver.named("execute_tool meta__whoami")
    assert (execute.trace_id, execute.parent_id) == (TRACE, server.span_id)
    (upstream,) = receiver.named("tools/call whoami")
    assert upstream.kind == 3  # CLIENT
    assert (upstream.trace_id, upstream.parent_id) == (TRACE, execute.span_id)
    assert seen.startswith(f"00-{TRACE}-{upstream.span_id}-")  # the upstream server is in the same trace
    assert not receiver.named("invoke_agent")  # a client's run is its requests, not an agent


async def test_a_traceparent_in_the_http_headers_is_continued(tmp_path: Path, receiver) -> None:
    gateway = HttpGateway(config(tmp_path, receiver.url))
    try:
        async with client(gateway.url, {"traceparent": TRACEPARENT}) as session:
            result = await session.call_tool("meta__whoami", {})
    finally:
        assert gateway.stop() == 0
    (server,) = receiver.named("tools/call meta__whoami")
    assert (server.trace_id, server.parent_id) == (TRACE, CLIENT_SPAN)
    assert result.structured_content["traceparent"].startswith(f"00-{TRACE}-")
    listed = receiver.named("tools/list")
    assert listed and all(s.trace_id == TRACE for s in listed)


async def test_a_gateway_started_with_a_bare_environment_follows_its_config_and_flags(tmp_path: Path, receiver) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from support.serve_testutil import serve_argv, wait_until

    state = tmp_path / "state"
    argv = serve_argv(config(tmp_path, receiver.url), "--home", str(state))
    # what Claude Desktop, Cursor or VS Code pass: no GREENROOM_HOME, no OTEL_*, a HOME of
    # their own (here an empty one, so nothing can land in the user's real state folder)
    bare = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "home")}
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=bare)
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        result = await session.call_tool("meta__whoami", {})
        assert not result.is_error
    # exported where [plugins.otel] says, under its service name: no OTEL_* needed
    assert wait_until(lambda: bool(receiver.named("tools/call meta__whoami")))
    assert {s.service for s in receiver.spans} == {"gateway-under-test"}
    # the listing and the priors went to --home, not to the state folder of the HOME it got
    assert wait_until(lambda: (state / "priors.sqlite3").exists())
    assert list((state / "mcp-cache").glob("*.jsonl"))
    assert not (tmp_path / "home").exists()
