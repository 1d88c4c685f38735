"""A stdio MCP server for the fault suite (``python log_server.py``), built on the SDK's own
server API: ``read_log`` answers with about 1 MB of log text (the Python tool's own), as a
careless server does, and ``parse`` is listed with an input schema whose regular
expression cannot compile."""

from __future__ import annotations

from typing import Any

from fault_tools import log_text  # beside this file, which Python puts first on the path
from mcp.server.mcpserver import MCPServer

BAD_PATTERN = "(unclosed"


class LogServer(MCPServer):
    async def list_tools(self) -> list[Any]:
        tools = await super().list_tools()
        schema = {"type": "object", "properties": {"when": {"type": "string", "pattern": BAD_PATTERN}}}
        return [t.model_copy(update={"input_schema": schema}) if t.name == "parse" else t for t in tools]


server = LogServer("greenroom-test-logs")


@server.tool(description="Read the whole service log.")
def read_log(lines: int = 0) -> str:
    return log_text()


@server.tool(description="Parse a time.")
def parse(when: str) -> str:
    return when


if __name__ == "__main__":
    server.run("stdio")
