"""A tool of an MCP server as a greenroom ``Tool``: its descriptor, its timeout, its call."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from greenroom.mcp.listing import McpToolSpec
from greenroom.mcp.observe import McpRequest, observed, run_hook
from greenroom.tools import ToolCallContext, ToolDescriptor, ToolResult

if TYPE_CHECKING:
    from greenroom.mcp.server import McpServer


def tool_parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's input schema as the providers take it: Anthropic requires ``"type":
    "object"`` at the top, which some servers leave out (the MCP spec requires it too)."""
    params = dict(schema)
    if "type" not in params:
        params = {"type": "object", **params}
    return params


class McpTool:
    """A tool of an MCP server, as greenroom's ``Tool``; it calls the server that made it."""

    def __init__(self, server: McpServer, spec: McpToolSpec, name: str) -> None:
        self.server = server
        self.spec = spec
        self._descriptor = ToolDescriptor(
            name=name,
            description=spec.description,
            parameters=tool_parameters(spec.input_schema),
            group=server.group_id,
            problem=spec.problem,
        )

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    @property
    def timeout(self) -> float | None:
        """The server's ``timeout``, plus the bounds of the steps a fault makes this call
        take first (a ping, a restart): see ``McpServer.call_budget``."""
        return self.server.call_budget()

    @property
    def mcp_name(self) -> str:
        return self.spec.name

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        """The call, observed by ``greenroom_mcp_request`` (what it adds to ``_meta`` is sent)."""
        request = McpRequest(
            "tools/call", self.spec.name, server=self.server.name, tool=ctx.tool_name, call_id=ctx.call_id
        )
        with observed(run_hook("greenroom_mcp_request", request), request):
            result = await self.server.call_tool(self.spec.name, args, progress=ctx.progress, meta=request.meta)
            request.is_error = result.is_error
            if result.is_error:
                request.error_type = "tool_error"
        return result

    def __repr__(self) -> str:
        return f"<mcp tool {self._descriptor.name} ({self.server.name}/{self.spec.name})>"


__all__ = ["McpTool", "tool_parameters"]
