"""MCP servers as a tool source: long-lived client sessions, cached listings, tool groups.

Each ``[[tools.mcp]]`` server becomes an :class:`McpServer`: a stdio subprocess or a
streamable-HTTP endpoint spoken to through the official ``mcp`` SDK (2.x). Its tools are
:class:`McpTool` objects named ``<server>__<tool>`` (or the bare tool name), and a
deferred server is one ``ToolGroup`` (``mcp:<server>``) whose catalog comes from a
listing cached on disk.

One job per module: ``checks`` (config rules, before anything starts), ``listing`` and
``cache`` (what a server listed, kept on disk), ``naming`` (model-facing tool names),
``errors`` (how a server is named in messages), ``host`` (the background loop that owns
the sessions, stopped when greenroom is terminated), ``connection`` (one session through
the SDK), ``server`` (a server's lifecycle), ``following`` (listing again when a server
says its tools changed), ``tool`` (a server's
tool as a greenroom ``Tool``), ``results`` (MCP results as ``ToolResult``), ``toolset``
(the servers of one runtime), ``sdk`` (the optional SDK, imported in one place).

Names load on first use, so ``import greenroom.mcp.checks`` (``greenroom config check``)
needs no SDK, while ``from greenroom.mcp import McpToolset`` without the ``mcp`` extra
raises an ImportError that says what to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    from greenroom.mcp.cache import cache_key, cache_path, read_cached_listing, write_cached_listing
    from greenroom.mcp.checks import check_mcp
    from greenroom.mcp.errors import McpError, McpStartError, describe_target
    from greenroom.mcp.host import McpHost
    from greenroom.mcp.listing import McpListing, McpToolSpec
    from greenroom.mcp.naming import ToolNamer
    from greenroom.mcp.results import to_tool_result
    from greenroom.mcp.server import McpServer
    from greenroom.mcp.tool import McpTool
    from greenroom.mcp.toolset import McpToolset, open_mcp_tools

_EXPORTS: dict[str, str] = {
    "cache_key": "greenroom.mcp.cache",
    "cache_path": "greenroom.mcp.cache",
    "read_cached_listing": "greenroom.mcp.cache",
    "write_cached_listing": "greenroom.mcp.cache",
    "check_mcp": "greenroom.mcp.checks",
    "McpError": "greenroom.mcp.errors",
    "McpStartError": "greenroom.mcp.errors",
    "describe_target": "greenroom.mcp.errors",
    "McpHost": "greenroom.mcp.host",
    "McpListing": "greenroom.mcp.listing",
    "McpToolSpec": "greenroom.mcp.listing",
    "ToolNamer": "greenroom.mcp.naming",
    "to_tool_result": "greenroom.mcp.results",
    "McpServer": "greenroom.mcp.server",
    "McpTool": "greenroom.mcp.tool",
    "McpToolset": "greenroom.mcp.toolset",
    "open_mcp_tools": "greenroom.mcp.toolset",
}

__all__ = [
    "McpError",
    "McpHost",
    "McpListing",
    "McpServer",
    "McpStartError",
    "McpTool",
    "McpToolSpec",
    "McpToolset",
    "ToolNamer",
    "cache_key",
    "cache_path",
    "check_mcp",
    "describe_target",
    "open_mcp_tools",
    "read_cached_listing",
    "to_tool_result",
    "write_cached_listing",
]


__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
