"""The matrix's MCP server (stdio): ``read`` and ``delete_all``; it writes ``started``
to ``POLICY_MARKS`` when it starts and each tool's name when it runs."""

from __future__ import annotations

import os

from mcp.server.mcpserver import MCPServer

MARKER = "XYZZY-SECRET"


def mark(name: str) -> None:
    with open(os.environ["POLICY_MARKS"], "a", encoding="utf-8") as f:
        f.write(name + "\n")


server = MCPServer("greenroom-test-policy")


@server.tool(description="Read a record by query (mcp).")
def read(q: str) -> str:
    mark("srv__read")
    return f"read {q}"


@server.tool(description=f"Delete all records {MARKER} (mcp).")
def delete_all(q: str) -> str:
    mark("srv__delete_all")
    return "deleted"


if __name__ == "__main__":
    mark("started srv")
    server.run("stdio")
