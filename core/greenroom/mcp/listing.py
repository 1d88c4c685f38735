"""What an MCP server says about itself: its tools (as greenroom keeps them) and instructions.

Plain data with a JSON form, so the listing cache and the naming rules need no SDK.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from greenroom.tools.schema.problem import SchemaFault, SchemaProblem

if TYPE_CHECKING:
    import mcp_types


@attrs.frozen
class McpToolSpec:
    """One tool as an MCP server lists it (the part greenroom keeps and caches)."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = attrs.field(factory=lambda: {"type": "object"})
    title: str | None = None
    fault: str | None = None
    """Why the listed ``inputSchema`` cannot be used (missing, or not a JSON object): the
    tool is listed, and unusable, and ``input_schema`` is an empty object schema."""

    @property
    def problem(self) -> SchemaProblem | None:
        """The ``fault`` as the schema checks say it (None for a tool with a schema)."""
        if self.fault is None:
            return None
        kind = SchemaFault.MISSING if self.fault == NO_SCHEMA else SchemaFault.NOT_A_SCHEMA
        return SchemaProblem(kind, "#", self.fault)

    @classmethod
    def unusable(cls, raw: Mapping[str, Any], fault: str) -> McpToolSpec:
        """A listed tool the SDK refused (``raw`` as the server sent it), kept by name."""
        described = raw.get("description") or raw.get("title")
        title = raw.get("title")
        return cls(
            name=str(raw["name"]),
            description=described if isinstance(described, str) else "",
            title=title if isinstance(title, str) else None,
            fault=fault,
        )

    @classmethod
    def from_mcp(cls, tool: mcp_types.Tool) -> McpToolSpec:
        schema = dict(tool.input_schema or {"type": "object"})
        return cls(
            name=tool.name, description=tool.description or tool.title or "", input_schema=schema, title=tool.title
        )

    def to_json(self) -> dict[str, Any]:
        data = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
            "title": self.title,
        }
        if self.fault is not None:
            data["fault"] = self.fault
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> McpToolSpec:
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            input_schema=dict(data.get("inputSchema") or {"type": "object"}),
            title=data.get("title"),
            fault=data.get("fault"),
        )


NO_SCHEMA = "the server listed it without an inputSchema"


def schema_fault(raw: Mapping[str, Any]) -> str | None:
    """What is wrong with the ``inputSchema`` of a listed tool, in a sentence; None when
    it is a JSON object (what the schema checks judge further)."""
    schema = raw.get("inputSchema")
    if schema is None:
        return NO_SCHEMA
    if not isinstance(schema, Mapping):
        kind = {str: "a string", list: "an array", bool: "a boolean"}.get(type(schema), "a number")
        return f"its inputSchema is {kind}, not a JSON object"
    return None


@attrs.frozen
class McpListing:
    """What a server said about itself: its tools and its instructions."""

    tools: tuple[McpToolSpec, ...]
    instructions: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    listed_at: float = 0.0


__all__ = ["NO_SCHEMA", "McpListing", "McpToolSpec", "schema_fault"]
