"""A tool of an MCP server as a greenroom ``Tool``: its descriptor, its timeout, its call.

A server takes at most ``max_concurrency`` calls at once from this process: a call beyond
that waits for a free slot, within its own timeout, and is then an error result that names
the server and the limit, never sent.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio

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


_MARGIN = 0.05
"""Seconds kept, before the call's deadline, to say the wait for a slot was the problem."""

_slots: weakref.WeakKeyDictionary[McpServer, anyio.Semaphore] = weakref.WeakKeyDictionary()


def server_slots(server: McpServer) -> anyio.Semaphore:
    """The slots of ``server``'s calls (``max_concurrency`` of them), made on first use."""
    slots = _slots.get(server)
    if slots is None:
        slots = _slots[server] = anyio.Semaphore(server.config.max_concurrency)
    return slots


async def take_slot(server: McpServer) -> str | None:
    """Wait for one of ``server``'s slots, within the call's timeout (ending a little before
    the deadline its caller set, so that the caller hears why); None once it is taken, else
    why the call is not sent. Release it with ``server_slots(server).release()``."""
    slots = server_slots(server)
    try:
        slots.acquire_nowait()
        return None
    except anyio.WouldBlock:
        pass
    bound = server.config.timeout
    deadline = anyio.current_effective_deadline()
    if deadline != math.inf:
        left = deadline - anyio.current_time()
        bound = min(bound, left - min(_MARGIN, left / 10))
    with anyio.move_on_after(max(bound, 0.0)):
        await slots.acquire()
        return None
    limit = server.config.max_concurrency
    return (
        f"MCP server {server.name!r} already has {limit} calls in progress, its limit (max_concurrency = "
        f"{limit}); this call waited {max(bound, 0.0):.3g} s for one to finish and was not sent"
    )


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
        refused = await take_slot(self.server)
        if refused is not None:
            return ToolResult.error(refused)
        request = McpRequest(
            "tools/call", self.spec.name, server=self.server.name, tool=ctx.tool_name, call_id=ctx.call_id
        )
        try:
            with observed(run_hook("greenroom_mcp_request", request), request):
                result = await self.server.call_tool(self.spec.name, args, progress=ctx.progress, meta=request.meta)
                request.is_error = result.is_error
                if result.is_error:
                    request.error_type = "tool_error"
        finally:
            server_slots(self.server).release()
        return result

    def __repr__(self) -> str:
        return f"<mcp tool {self._descriptor.name} ({self.server.name}/{self.spec.name})>"


__all__ = ["McpTool", "server_slots", "take_slot", "tool_parameters"]
