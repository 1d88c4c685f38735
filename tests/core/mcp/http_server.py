"""A small streamable-HTTP MCP server for the tests: ``python http_server.py PORT``.

Built on the SDK's own server API (MCPServer), bound to 127.0.0.1 only.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcp.server.mcpserver import Context, MCPServer

server = MCPServer(
    "greenroom-test-http",
    instructions="Arithmetic and diagnostics for greenroom's tests.\nCall add for sums.",
)


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="The value of the X-Greenroom-Test request header.")
def header(ctx: Context) -> str:
    request: Any = ctx.request_context.request
    return str(request.headers.get("x-greenroom-test", "<missing>")) if request is not None else "<no request>"


@server.tool(description="Sleep, then answer.")
async def slow(seconds: float) -> str:
    await anyio.sleep(seconds)
    return "done"


if __name__ == "__main__":
    server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
