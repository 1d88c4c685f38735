"""A server's live MCP session, for what greenroom passes through rather than wraps
(prompts and resources offered by ``greenroom serve``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from greenroom.mcp.server import McpServer

T = TypeVar("T")


async def on_session(server: McpServer, use: Callable[[Any], Awaitable[T]]) -> T:
    """``use(client_session)`` with the server's live session (started if need be), in
    the event loop that owns it."""

    async def run() -> T:
        conn = await server._ensure_connected()
        assert conn.session is not None
        return await use(conn.session)

    return await server._host.call(run)


def offers(server: McpServer, capability: str) -> bool:
    """Whether a started server said it has ``capability`` (``prompts``, ``resources``);
    True before it started, when nothing is known yet."""
    conn = server._conn
    session = conn.session if conn is not None else None
    init = session.initialize_result if session is not None else None
    return init is None or getattr(init.capabilities, capability, None) is not None


__all__ = ["offers", "on_session"]
