"""The one member of the MCP SDK the gateway reads without a public door
(``greenroom_gateway.requests.connection_of``: a request's connection, whose ``state`` and
``exit_stack`` hold a 2025-11-25 client's run) is where the gateway reads it, and the public
doors it reads instead of private members are there: a new SDK that moves one fails here,
by name, rather than as clients whose runs are never ended."""

from __future__ import annotations

import contextlib
import dataclasses
import inspect
from typing import Any

import mcp_types as t
import pytest
from mcp import Client
from mcp.server.auth.middleware import auth_context
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.session import ServerSession

from greenroom_gateway.requests import client_name_of, connection_of, sessionless

pytestmark = pytest.mark.anyio


def test_the_public_doors_are_there() -> None:
    fields = {f.name for f in dataclasses.fields(ServerRequestContext)}
    assert {"protocol_version", "session", "meta", "params", "request", "request_id"} <= fields
    assert isinstance(inspect.getattr_static(ServerSession, "client_params"), property)
    assert list(inspect.signature(auth_context.get_access_token).parameters) == []


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_request_reaches_its_connection_state_and_teardown(mode: str) -> None:
    seen: list[tuple[Any, Any, bool, str | None]] = []
    closed: list[str] = []

    async def list_tools(ctx: ServerRequestContext[Any, Any], params: Any) -> t.ListToolsResult:
        conn = connection_of(ctx)
        assert isinstance(conn.state, dict) and isinstance(conn.exit_stack, contextlib.AsyncExitStack)
        if "mark" not in conn.state:
            conn.state["mark"] = object()
            conn.exit_stack.push_async_callback(_close, closed)
        seen.append((conn, conn.state["mark"], sessionless(ctx), client_name_of(ctx)))
        return t.ListToolsResult(tools=[])

    async with Client(Server("s", on_list_tools=list_tools), mode=mode) as client:  # type: ignore[arg-type]
        await client.list_tools()
        await client.list_tools()
    (conn1, mark1, modern1, name1), (conn2, mark2, modern2, _) = seen
    assert modern1 is modern2 is (mode != "legacy")
    if mode == "legacy":  # one connection for the session: what the first request kept is there
        assert conn1 is conn2 and mark1 is mark2 and name1 is not None
    assert closed  # the SDK unwound the teardown the gateway pushed


async def _close(closed: list[str]) -> None:
    closed.append("closed")
