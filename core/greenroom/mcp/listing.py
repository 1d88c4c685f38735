"""What an MCP server says about itself: its tools (as greenroom keeps them) and instructions.

Plain data with a JSON form, so the listing cache and the naming rules need no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import mcp_types


@attrs.frozen
class McpToolSpec:
    """One tool as an MCP server lists it (the part greenroom keeps and caches)."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    title: str | None = None

    @classmethod
    def from_mcp(cls, tool: mcp_types.Tool) -> McpToolSpec:
        schema = dict(tool.input_schema or {"type": "object"})
        return cls(
            name=tool.name, description=tool.description or tool.title or "", input_schema=schema, title=tool.title
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
            "title": self.title,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> McpToolSpec:
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            input_schema=dict(data.get("inputSchema") or {"type": "object"}),
            title=data.get("title"),
        )


@attrs.frozen
class McpListing:
    """What a server said about itself: its tools and its instructions."""

    tools: tuple[McpToolSpec, ...]
    instructions: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    listed_at: float = 0.0


__all__ = ["McpListing", "McpToolSpec"]
