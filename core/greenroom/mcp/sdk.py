"""The optional MCP SDK (2.x), imported in this one place.

Only the modules that speak to a server import it (``connection``, ``server``,
``results``); the config checks, the listing cache and the naming rules never do, so
``greenroom config check`` works without the ``mcp`` extra. A missing extra is one
ImportError that says what to install.
"""

from __future__ import annotations

try:
    import httpx2
    import mcp_types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
    from mcp.shared.message import SessionMessage
except ImportError as _exc:  # pragma: no cover - exercised only without the extra (in a subprocess)
    from greenroom.mcp.errors import sdk_missing

    raise ImportError(f"MCP tool sources: {sdk_missing(_exc)}") from _exc

__all__ = [
    "ClientSession",
    "MCPError",
    "SessionMessage",
    "StdioServerParameters",
    "httpx2",
    "mcp_types",
    "stdio_client",
    "streamable_http_client",
]
