"""The background event loop every MCP session of a process runs in, and its stop when
the process is terminated or exits."""

from greenroom.mcp.host.thread import CLOSE_TIMEOUT, McpHost, in_caller_loop

__all__ = ["CLOSE_TIMEOUT", "McpHost", "in_caller_loop"]
