"""Tools that hold until a test lets them go, for the gateway's limits and shutdown tests:
``python hold_server.py`` is a stdio MCP server with them, and ``TOOLS`` are the same as
greenroom Python tools (``[tools] python = [".../hold_server.py:TOOLS"]``).

``hold(tag)`` writes ``started-<tag>`` in the folder ``HOLD_DIR`` names, keeps in ``peak``
the most calls it ever had in progress at once, and answers ``released <tag>`` once a file
``release`` exists there (it waits on the file, not on a clock); ``echo(text)`` answers
``text`` at once.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import anyio

_in_progress = 0
_peak = 0


async def hold(tag: str) -> str:
    """Hold until released."""
    global _in_progress, _peak
    folder = Path(os.environ["HOLD_DIR"])
    _in_progress += 1
    try:
        if _in_progress > _peak:
            _peak = _in_progress
            (folder / "peak").write_text(str(_peak))
        (folder / f"started-{tag}").write_text("started")
        while not (folder / "release").exists():
            await anyio.sleep(0.02)
        return f"released {tag}"
    finally:
        _in_progress -= 1


def echo(text: str) -> str:
    """Echo text back."""
    return text


def _greenroom_tools() -> list[Any]:
    try:
        from greenroom import tool
    except ImportError:  # run as an MCP server where only the SDK is
        return []
    return [tool(timeout=300)(hold), tool(echo)]


TOOLS = _greenroom_tools()


async def main() -> None:
    import mcp_types as t
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server

    obj: dict[str, Any] = {"type": "object", "properties": {"tag": {"type": "string"}}, "required": ["tag"]}
    text: dict[str, Any] = {"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}
    tools = [
        t.Tool(name="hold", description="Hold until released.", input_schema=obj),
        t.Tool(name="echo", description="Echo text back.", input_schema=text),
    ]

    async def list_tools(ctx: Any, params: Any) -> t.ListToolsResult:
        return t.ListToolsResult(tools=tools)

    async def call_tool(ctx: Any, params: t.CallToolRequestParams) -> t.CallToolResult:
        args = params.arguments or {}
        said = await hold(str(args["tag"])) if params.name == "hold" else echo(str(args.get("text", "")))
        return t.CallToolResult(content=[t.TextContent(type="text", text=said)])

    server = Server("greenroom-test-hold", on_list_tools=list_tools, on_call_tool=call_tool)
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
