"""The MCP SDK's private parts greenroom reads, in this one place (mcp 2.3).

Listing a faulty server: the SDK checks a ``tools/list`` result whole, so one tool it
refuses (no ``inputSchema``, say) would cost the whole server. ``greenroom.mcp.connection``
asks for such a page again through the session's dispatcher (what ``send_request`` does
first: the session's stamp, then the raw request), checks tool by tool, and hands the valid
tools back to the session, which keeps their output schemas for checking results.

The SDK has no public way to do these; pyproject.toml bounds ``mcp`` below its next minor
release, and tests/core/mcp/test_sdk_private.py fails when the SDK moves them.
"""

from __future__ import annotations

from typing import Any, cast

from greenroom.mcp.sdk import ClientSession, mcp_types


async def raw_request(session: ClientSession, request: Any) -> Any:
    """``request`` sent as the session sends it (stamped for the negotiated revision), its
    result left unchecked: the raw JSON the server answered."""
    data = request.model_dump(by_alias=True, mode="json", exclude_none=True)
    opts: dict[str, Any] = {}
    session._stamp(data, cast(Any, opts))
    return await session._dispatcher.send_raw_request(data["method"], data.get("params"), cast(Any, opts))


def absorb_tools(session: ClientSession, page: mcp_types.ListToolsResult, *, complete: bool) -> None:
    """Give the session the tools of a page checked here, as if it had taken the page
    itself (``complete``: the whole listing, in one page)."""
    session._absorb_tool_listing(page, complete=complete)


__all__ = ["absorb_tools", "raw_request"]
