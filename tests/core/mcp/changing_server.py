"""A stdio MCP server whose tools change while it runs: ``python changing_server.py``.

Built on the SDK's own server API. ``grow`` adds a tool, ``shrink`` removes one; each
then sends ``notifications/tools/list_changed``, as servers whose tools depend on what
happened do. With ``BROKEN_TOOLS`` set it also lists two tools the SDK's client model
refuses: one without an ``inputSchema`` and one whose ``inputSchema`` is a string.
"""

from __future__ import annotations

import os
import warnings
from typing import Any

import mcp_types
import mcp_types.methods
from mcp.server.mcpserver import Context, MCPServer

_checked = mcp_types.methods.serialize_server_result


def _unchecked(method: str, version: str, data: dict[str, Any]) -> dict[str, Any]:
    """The SDK checks what its servers send; servers in the wild do not, so this one
    sends its tools as they are."""
    if method == "tools/list" and os.environ.get("BROKEN_TOOLS"):
        return data
    return _checked(method, version, data)


mcp_types.methods.serialize_server_result = _unchecked
warnings.filterwarnings("ignore", message="Pydantic serializer warnings")


class ChangingServer(MCPServer):
    async def list_tools(self) -> list[Any]:
        tools = await super().list_tools()
        if os.environ.get("BROKEN_TOOLS"):
            # model_construct: the server side would refuse to build them, real servers send them
            tools.append(mcp_types.Tool.model_construct(name="no_schema", description="Listed without a schema."))
            tools.append(
                mcp_types.Tool.model_construct(name="text_schema", description="A string schema.", input_schema="text")
            )
        return tools


server = ChangingServer("greenroom-test-changing", instructions="Tools that come and go, for greenroom's tests.")


@server.tool(description="Echo the text.")
def echo(text: str) -> str:
    return text


@server.tool(description="Add a tool named `name` that reverses a text, and say so to the client.")
async def grow(name: str, ctx: Context) -> str:
    def reverse(text: str) -> str:
        return text[::-1]

    server.add_tool(reverse, name=name, description=f"Reverse the text ({name}).")
    await ctx.session.send_tool_list_changed()
    return f"added {name}"


@server.tool(description="Remove the tool named `name`, and say so to the client.")
async def shrink(name: str, ctx: Context) -> str:
    server.remove_tool(name)
    await ctx.session.send_tool_list_changed()
    return f"removed {name}"


if __name__ == "__main__":
    server.run("stdio")
