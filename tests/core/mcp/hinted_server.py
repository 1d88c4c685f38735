"""A stdio MCP server that asks hosts to keep one tool loaded: ``python hinted_server.py``.

Built on the SDK's own server API. ``status`` is listed with
``_meta = {"anthropic/alwaysLoad": true}``, as servers say it for Claude Code; ``log``
with ``"true"`` (a string: no hint), ``diff`` and ``blame`` with no ``_meta`` at all.
"""

from __future__ import annotations

from mcp.server.mcpserver import MCPServer

server = MCPServer("greenroom-test-hinted", instructions="A repository's history, for greenroom's tests.")


@server.tool(description="Show the working tree's status.", meta={"anthropic/alwaysLoad": True})
def status() -> str:
    return "clean"


@server.tool(description="Show the commit log.", meta={"anthropic/alwaysLoad": "true"})
def log(limit: int = 10) -> str:
    return f"{limit} commits"


@server.tool(description="Show the changes not yet committed.")
def diff(path: str = ".") -> str:
    return f"no changes in {path}"


@server.tool(description="Show who last changed each line of a file.")
def blame(path: str) -> str:
    return f"everyone wrote {path}"


if __name__ == "__main__":
    server.run("stdio")
