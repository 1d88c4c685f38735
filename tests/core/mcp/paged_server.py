"""A paginating MCP server for the listing tests: ``python paged_server.py``, or in process
through ``make_server``.

Built on the SDK's low-level server, as large servers are. It lists ``PAGED_TOOLS`` tools
(``t0``, ``t1``, ...; each with a schema of its own) ``PAGED_SIZE`` at a time, the cursor
being the index of the page's first tool. What it does wrong comes from its environment:

- ``PAGED_FAIL_PAGE``: that page (1-based) answers with an error;
- ``PAGED_BROKEN_PAGE``: that page also lists ``broken``, a tool without an ``inputSchema``
  (which the SDK's client refuses: the page is then taken tool by tool);
- ``PAGED_LOOP``: the last page's cursor is the second page's (a paginator that loops);
- ``PAGED_HANG_PAGE``: that page is never answered;
- ``PAGED_LOG``: a file each request's cursor is appended to (``-`` for the first page).
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Callable
from typing import Any

import anyio
import mcp_types
import mcp_types.methods
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

_checked = mcp_types.methods.serialize_server_result


def _unchecked(method: str, version: str, data: dict[str, Any]) -> dict[str, Any]:
    """The SDK checks what its servers send; servers in the wild do not, so this one
    sends its tools as they are."""
    return data if method == "tools/list" else _checked(method, version, data)


def schema(i: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {f"q{i}": {"type": "string", "description": f"What tool {i} looks for."}},
        "required": [f"q{i}"],
    }


def make_server(env: dict[str, str], asked: Callable[[str | None], None] = lambda cursor: None) -> Server[Any]:
    """The server ``env`` describes (see the module); ``asked`` hears each page's cursor."""
    count, size = int(env.get("PAGED_TOOLS", "2500")), int(env.get("PAGED_SIZE", "300"))
    fail, broken = int(env.get("PAGED_FAIL_PAGE", "0")), int(env.get("PAGED_BROKEN_PAGE", "0"))
    hang, loop = int(env.get("PAGED_HANG_PAGE", "0")), bool(env.get("PAGED_LOOP"))

    async def list_tools(ctx: Any, params: mcp_types.PaginatedRequestParams | None) -> mcp_types.ListToolsResult:
        cursor = params.cursor if params is not None else None
        asked(cursor)
        start = int(cursor or 0)
        page = start // size + 1
        if page == fail:
            raise MCPError(-32603, f"page {page} could not be listed")
        if page == hang:
            await anyio.sleep_forever()
        tools = [
            mcp_types.Tool(name=f"t{i}", description=f"Tool {i}.", input_schema=schema(i))
            for i in range(start, min(start + size, count))
        ]
        if page == broken:
            tools.insert(1, mcp_types.Tool.model_construct(name="broken", description="Listed without a schema."))
        end = start + size
        next_cursor = str(end) if end < count else (str(size) if loop else None)
        return mcp_types.ListToolsResult(tools=tools, next_cursor=next_cursor)

    return Server("greenroom-test-paged", on_list_tools=list_tools)


def main() -> None:
    from mcp.server.stdio import stdio_server

    mcp_types.methods.serialize_server_result = _unchecked  # type: ignore[assignment]
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings")
    log = os.environ.get("PAGED_LOG")

    def asked(cursor: str | None) -> None:
        if log:
            with open(log, "a", encoding="utf-8") as f:
                f.write(f"{cursor or '-'}\n")

    server = make_server(dict(os.environ), asked)

    async def serve() -> None:
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())

    anyio.run(serve)


if __name__ == "__main__":
    main()
