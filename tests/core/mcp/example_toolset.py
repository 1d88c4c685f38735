"""MCP servers from Python, without a config file (quoted in docs/mcp.md, run by the tests)."""

from __future__ import annotations

import sys

import anyio

from greenroom.config import McpServerConfig
from greenroom.mcp import McpToolset


async def main() -> str:
    clock = McpServerConfig(name="time", command=sys.executable, args=("-m", "mcp_server_time"))
    async with McpToolset([clock]) as toolset:  # lists what is not cached, starts eager servers
        (group,) = toolset.groups()  # one ToolGroup per deferred server
        print(group.id, [d.name for d in group.known])
        result = await toolset.servers["time"].call_tool("get_current_time", {"timezone": "UTC"})
        return result.content  # the servers stop when the block ends


if __name__ == "__main__":
    print(anyio.run(main))
