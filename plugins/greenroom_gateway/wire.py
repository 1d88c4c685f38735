"""greenroom's tools and results in MCP's words, for the gateway's clients.

A result whose source gave MCP content blocks (an upstream server) goes back with those
blocks as they were: images, audio, resource links and embedded resources included. Any
other result (a Python tool, a plugin's tool, an error greenroom wrote) is its text.
Structured content passes through when it is a JSON object, as MCP requires.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom.mcp.sdk import mcp_types
from greenroom.tools import ToolDescriptor, ToolResult

_BLOCKS = (
    mcp_types.TextContent,
    mcp_types.ImageContent,
    mcp_types.AudioContent,
    mcp_types.ResourceLink,
    mcp_types.EmbeddedResource,
)


def to_mcp_tool(descriptor: ToolDescriptor) -> mcp_types.Tool:
    return mcp_types.Tool(
        name=descriptor.name, description=descriptor.description, input_schema=dict(descriptor.parameters)
    )


def to_call_result(result: ToolResult) -> mcp_types.CallToolResult:
    blocks = result.blocks
    content: list[Any]
    if blocks is not None and all(isinstance(b, _BLOCKS) for b in blocks):
        content = list(blocks)
    else:
        content = [mcp_types.TextContent(type="text", text=result.content)] if result.content else []
    structured = result.structured if isinstance(result.structured, Mapping) else None
    return mcp_types.CallToolResult(
        content=content,
        structured_content=dict(structured) if structured is not None else None,
        is_error=result.is_error,
    )


__all__ = ["to_call_result", "to_mcp_tool"]
