"""greenroom's tools, results and lists in MCP's words, for the gateway's clients.

A result whose source gave MCP content blocks (an upstream server) goes back with those
blocks as they were: images, audio, resource links and embedded resources included. Any
other result (a Python tool, a plugin's tool, an error greenroom wrote) is its text.
Structured content passes through when it is a JSON object, as MCP requires.

Every list the gateway answers (tools, prompts, resources, resource templates) is cut
into pages of at most ``PAGE_SIZE`` items, in a fixed order, so a listing of 100,000
eager tools never becomes one unbounded message. The cursor is opaque to the client: it
holds the offset of the next page. ``ttlMs`` and ``cacheScope`` (MCP 2026-07-28) say the
truth: a list that is the same for every caller and changes only when the gateway's
learned placement is revised or an upstream server's list changes is ``public`` for
``SHARED_TTL_MS``; one that depends on the caller (per client priors, views by scope) is
``private``; one that can change with the caller's own calls (a 2025-11-25 client with a
strategy that adds found tools) is not cacheable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, TypeVar

import attrs
import mcp_types

from greenroom import ToolDescriptor, ToolResult

PAGE_SIZE = 500
SHARED_TTL_MS = 300_000
UPSTREAM_TTL_MS = 60_000
_PREFIX = "greenroom-page:"
T = TypeVar("T")

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


class CursorError(ValueError):
    """A cursor this gateway did not hand out."""


@attrs.frozen
class Freshness:
    ttl_ms: int
    scope: Literal["public", "private"]


NOT_CACHEABLE = Freshness(0, "private")


def page(items: Sequence[T], cursor: str | None, size: int = PAGE_SIZE) -> tuple[Sequence[T], str | None]:
    """The page ``cursor`` points at (the first for None) and the next page's cursor."""
    start = 0
    if cursor:
        if not cursor.startswith(_PREFIX) or not cursor[len(_PREFIX) :].isdigit():
            raise CursorError(f"invalid cursor {cursor[:40]!r}: ask for the first page without one")
        start = int(cursor[len(_PREFIX) :])
    end = start + size
    following = f"{_PREFIX}{end}" if end < len(items) else None
    return items[start:end], following


__all__ = [
    "NOT_CACHEABLE",
    "PAGE_SIZE",
    "SHARED_TTL_MS",
    "UPSTREAM_TTL_MS",
    "CursorError",
    "Freshness",
    "page",
    "to_call_result",
    "to_mcp_tool",
]
