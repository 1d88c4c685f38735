"""One live session with an MCP server: opened through the SDK (stdio or streamable HTTP),
listed, held open until told to stop, and explained when it could not be opened.

Everything here runs in the host loop (``greenroom.mcp.thread``): the SDK's context
managers are entered and exited in the one task ``run_session`` is, and nowhere else.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any, cast

import anyio
import attrs
from anyio.abc import TaskStatus

from greenroom._support.redact import Redactor
from greenroom.config import McpServerConfig
from greenroom.mcp.errors import first_error
from greenroom.mcp.listing import McpListing, McpToolSpec
from greenroom.mcp.oauth.provider import LoginRequired, auth_for
from greenroom.mcp.sdk import (
    ClientSession,
    MCPError,
    StdioServerParameters,
    httpx2,
    mcp_types,
    stdio_client,
    streamable_http_client,
)

log = logging.getLogger(__name__)

CLIENT_INFO = mcp_types.Implementation(name="greenroom", version="0")
_MAX_LIST_PAGES = 100
_STDERR_TAIL = 1500


@attrs.define(eq=False)
class Connection:
    """One live session; only the host loop touches it."""

    session: ClientSession | None = None
    errlog: IO[str] | None = None
    stop: anyio.Event = attrs.field(factory=anyio.Event)
    done: anyio.Event = attrs.field(factory=anyio.Event)
    broken: str | None = None  # why the connection is unusable (then it is replaced)
    suspect: bool = False  # a call timed out or was abandoned: probe before reuse

    @classmethod
    def for_server(cls, config: McpServerConfig) -> Connection:
        conn = cls()
        if not config.url:
            # Owned here, not by the session task, so the server's last words are still
            # readable after the task ended (a failed start, a crash).
            conn.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace", prefix="greenroom-mcp-")
        return conn

    def stderr_tail(self, redact: Redactor) -> str:
        """The last lines the server wrote to stderr, without secrets."""
        if self.errlog is None:
            return ""
        try:
            fd = self.errlog.fileno()
            size = os.fstat(fd).st_size
            # pread: the child shares the file offset; seeking would make it overwrite.
            raw = os.pread(fd, _STDERR_TAIL, max(0, size - _STDERR_TAIL)).decode("utf-8", "replace")
        except (OSError, ValueError):
            return ""
        lines = [ln for ln in raw.splitlines() if ln.strip()]
        return redact("\n".join(lines[-12:]))


async def run_session(
    config: McpServerConfig,
    base_dir: Path,
    conn: Connection,
    on_listing: Callable[[McpListing], None],
    redact: Redactor,
    *,
    task_status: TaskStatus[None],
) -> None:
    """The dedicated task that owns one session: open, initialise and list (then report
    ``started``), and hold the session until ``conn.stop`` is set."""
    started = False
    try:
        async with contextlib.AsyncExitStack() as stack:
            if config.url:
                client = await stack.enter_async_context(
                    httpx2.AsyncClient(
                        auth=auth_for(config),  # OAuth: stored tokens, refreshed; None without
                        headers=dict(config.headers),
                        timeout=httpx2.Timeout(config.connect_timeout, read=max(300.0, config.timeout)),
                    )
                )
                read, write = await stack.enter_async_context(streamable_http_client(config.url, http_client=client))
            else:
                params = StdioServerParameters(
                    command=config.command or "",
                    args=list(config.args),
                    env=dict(config.env) or None,
                    cwd=str(base_dir),
                )
                read, write = await stack.enter_async_context(stdio_client(params, errlog=cast(Any, conn.errlog)))
            session = await stack.enter_async_context(ClientSession(read, write, client_info=CLIENT_INFO))
            init = await session.initialize()
            listing = await list_server(session, init)
            conn.session = session
            on_listing(listing)
            started = True
            task_status.started()
            await conn.stop.wait()
    except BaseException as exc:
        if not started or isinstance(exc, anyio.get_cancelled_exc_class()):
            raise
        # After start-up nothing may escape: an error here would cancel the host's
        # task group and with it every other server.
        log.warning("MCP server %r session ended: %s", config.name, redact(f"{first_error(exc)!r}"))
    finally:
        conn.broken = conn.broken or "closed"
        conn.done.set()


async def list_server(session: ClientSession, init: mcp_types.InitializeResult) -> McpListing:
    """Every page of the server's tools, with what it said about itself at start-up."""
    specs: list[McpToolSpec] = []
    cursor: str | None = None
    for _ in range(_MAX_LIST_PAGES):  # a paginator that never ends cannot hang us
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        page = await session.list_tools(params=params)
        specs.extend(McpToolSpec.from_mcp(t) for t in page.tools)
        cursor = page.next_cursor
        if not cursor:
            break
    info = init.server_info
    return McpListing(
        tools=tuple(specs),
        instructions=init.instructions,
        server_name=info.name if info else None,
        server_version=info.version if info else None,
        listed_at=time.time(),
    )


def start_failure_reason(config: McpServerConfig, exc: BaseException) -> str:
    """Why a session could not be opened, in the user's terms."""
    leaf = first_error(exc)
    if isinstance(leaf, LoginRequired):  # its message says which server and the command to run
        return str(leaf)
    if isinstance(leaf, TimeoutError):
        return f"no answer within {config.connect_timeout:g} s (connect_timeout)"
    if isinstance(leaf, FileNotFoundError):
        return f"command not found: {config.command!r}"
    if isinstance(leaf, PermissionError):
        return f"command not executable: {config.command!r}"
    if isinstance(leaf, MCPError) and leaf.code == mcp_types.CONNECTION_CLOSED:
        return "the server closed the connection before the MCP handshake completed (did it exit?)"
    if isinstance(leaf, httpx2.HTTPError):
        return f"HTTP error: {type(leaf).__name__}: {leaf}"
    return f"{type(leaf).__name__}: {leaf}"


__all__ = ["CLIENT_INFO", "Connection", "list_server", "run_session", "start_failure_reason"]
