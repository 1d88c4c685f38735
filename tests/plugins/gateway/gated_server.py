"""A stdio MCP server that starts serving only once a file exists, for the gateway's
start-up tests: ``python gated_server.py`` waits (polling, no fixed sleep) until the file
``GATE`` names exists, then serves ``echo``. Until then it answers nothing, as a server
that takes long to start (a container pulled, a package installed) does."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio


async def main() -> None:
    gate = Path(os.environ["GATE"])
    while not gate.exists():
        await anyio.sleep(0.02)

    import mcp_types as t
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    text: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    tools = [t.Tool(name="echo", description="Echo text back.", input_schema=text)]

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        said = str((params.arguments or {}).get("text", ""))
        return t.CallToolResult(content=[t.TextContent(type="text", text=said)])

    server = Server("greenroom-test-gated", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
