"""A small stdio MCP server for the fault tests: ``python fault_server.py``.

Built on the SDK's own server API (``MCPServer``, formerly FastMCP). What it does wrong
comes from its environment, so a config's ``env`` table chooses the fault:

- ``FAULT_PID_FILE``: write the server's pid there once it runs;
- ``FAULT_FAIL``: fail before the handshake: say on stderr that ``TOKEN`` was refused
  (quoting it, as careless servers do) and exit with status 3;
- ``FAULT_SLOW_START``: seconds to wait before serving (a server that is slow to start);
- ``FAULT_DUPLICATE``: list ``echo`` twice, the copy with another description;
- ``FAULT_MARK_FILE``: where ``hang`` writes that it has begun;
- ``FAULT_GARBAGE``: print a line that is not JSON-RPC on stdout before serving.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import MCPServer

HANG_SECONDS = 120.0  # long enough for any test, short enough that a failed test leaves nothing for long


class FaultServer(MCPServer):
    async def list_tools(self) -> list[Any]:
        tools = await super().list_tools()
        if os.environ.get("FAULT_DUPLICATE"):
            echo = next(t for t in tools if t.name == "echo")
            tools.append(echo.model_copy(update={"description": "Echo the text (the second copy)."}))
        return tools


server = FaultServer("greenroom-test-faults", instructions="Faults on demand, for greenroom's tests.")


@server.tool(description="Echo the text.")
def echo(text: str) -> str:
    return text


@server.tool(description="Stop answering anything, pings included: the whole server blocks.")
async def hang() -> str:
    Path(os.environ["FAULT_MARK_FILE"]).write_text("hanging")
    time.sleep(HANG_SECONDS)  # blocks the event loop itself, not only this call
    return "woke up"


if __name__ == "__main__":
    if os.environ.get("FAULT_PID_FILE"):
        Path(os.environ["FAULT_PID_FILE"]).write_text(str(os.getpid()))
    if os.environ.get("FAULT_FAIL"):
        print(f"fatal: the token {os.environ.get('TOKEN', '')} was refused", file=sys.stderr, flush=True)
        sys.exit(3)
    time.sleep(float(os.environ.get("FAULT_SLOW_START") or 0))
    if os.environ.get("FAULT_GARBAGE"):
        print("Starting fault server v1 (this line is not JSON-RPC)", flush=True)
    server.run("stdio")
