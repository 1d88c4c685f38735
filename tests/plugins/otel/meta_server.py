"""A stdio MCP server that answers what it was sent in ``params._meta``: ``python
meta_server.py``. Its one tool, ``whoami``, answers the request's ``traceparent`` (and
``tracestate``) as structured content, so a test sees what reached the upstream server."""

from __future__ import annotations

from typing import Any

import anyio
import mcp_types as t
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

TOOLS = [
    t.Tool(
        name="whoami",
        description="Say which trace this request belongs to.",
        input_schema={"type": "object", "properties": {"note": {"type": "string"}}},
    )
]


async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
    return t.ListToolsResult(tools=TOOLS)


async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
    meta = dict(ctx.meta or {})
    seen = {k: meta.get(k) for k in ("traceparent", "tracestate")}
    return t.CallToolResult(content=[t.TextContent(type="text", text=str(seen))], structured_content=seen)


server = Server("meta", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
