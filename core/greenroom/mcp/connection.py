"""One live session with an MCP server: opened through the SDK (stdio or streamable HTTP),
listed, held open until told to stop, and explained when it could not be opened.

Everything here runs in the host loop (``greenroom.mcp.host``): the SDK's context
managers are entered and exited in the one task ``run_session`` is, and nowhere else.
"""

from __future__ import annotations

import contextlib
import logging
import os
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any, NamedTuple, cast

import anyio
import anyio.lowlevel
import attrs
import pydantic
from anyio.abc import TaskGroup, TaskStatus

from greenroom._support.collector import collection_paused
from greenroom._support.redact import Redactor
from greenroom.config import McpServerConfig
from greenroom.mcp.errors import first_error, serving
from greenroom.mcp.listing import ListingBuilder, McpListing, McpToolSpec, json_kind, schema_fault
from greenroom.mcp.oauth.provider import LoginRequired, auth_for
from greenroom.mcp.reading import Rereading
from greenroom.mcp.sdk import (
    ClientSession,
    MCPError,
    StdioServerParameters,
    httpx2,
    mcp_types,
    stdio_client,
    streamable_http_client,
)
from greenroom.mcp.sdk_private import absorb_tools, raw_request
from greenroom.skills.entry import SKILLS_EXTENSION
from greenroom.tools import ToolResult
from greenroom.tools.base import Asker

log = logging.getLogger(__name__)

CLIENT_INFO = mcp_types.Implementation(name="greenroom", version="0")
_SESSION: dict[str, Any] = {"client_info": CLIENT_INFO, "extensions": {SKILLS_EXTENSION: {}}}  # greenroom.skills.mcp
_MAX_LIST_PAGES = 100_000
"""Pages of one listing at most (a server that lists 100,000 tools ten at a time still fits)."""
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
    askers: dict[object, Asker | None] = attrs.field(factory=dict)
    """Whom each call in progress can ask (``call_asker``): the server's elicitation goes to them."""

    @classmethod
    def for_server(cls, config: McpServerConfig) -> Connection:
        conn = cls()
        if not config.url:
            # Owned here, not by the session task, so the server's last words are still
            # readable after the task ended (a failed start, a crash).
            conn.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace", prefix="greenroom-mcp-")
        return conn

    @contextlib.contextmanager
    def asking(self, ask: Asker | None) -> Iterator[None]:
        """While a call is in progress: whom it can ask (None: nobody)."""
        key = object()
        self.askers[key] = ask
        try:
            yield
        finally:
            del self.askers[key]

    async def elicit(self, context: Any, params: Any) -> Any:
        """The server's ``elicitation/create``, put to the one asker of the calls in
        progress: over stdio (and 2025-11-25) nothing says which call a server's request
        belongs to, so with the calls of several askers in progress nobody is asked."""
        askers = list(dict.fromkeys(self.askers.values()))  # None: a call nobody can be asked for
        if len(askers) == 1 and askers[0] is not None:
            return await askers[0](params)
        why = "no call of a client that can be asked is" if askers in ([], [None]) else "calls of several callers are"
        message = f"elicitation/create refused: {why} in progress on this server (greenroom relays it to one)"
        return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=message)

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

    def call_failed(
        self, exc: Exception, label: str, name: str, timeout: float, *, again: str, redact: Redactor
    ) -> ToolResult:
        """What a call of the tool ``name`` that raised ``exc`` answers; marks this
        connection to be checked (``suspect``) or replaced (``broken``) when it must be.
        ``again`` says what the next call does to a broken one (restarted, reconnected)."""
        if isinstance(exc, TimeoutError):
            self.suspect = True
            return ToolResult.error(
                f"{label} did not answer the call to {name!r} within {timeout:g} s; "
                f"it will be checked, and {again} if hung, on the next call"
            )
        if isinstance(exc, MCPError):
            if exc.code != mcp_types.CONNECTION_CLOSED:
                return ToolResult.error(redact(f"{label} rejected the call to {name!r}: {exc.message}"))
            self.broken = "connection closed"
            tail = self.stderr_tail(redact)
            msg = (
                f"{label} closed the connection during the call to {name!r} (did the server exit?); "
                f"it will be {again} on the next call"
            )
            if tail:
                msg += f"\nServer stderr (last lines):\n{tail}"
            return ToolResult.error(redact(msg))
        if isinstance(exc, (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError)):
            self.broken = type(exc).__name__
            return ToolResult.error(
                f"{label} is unreachable ({type(exc).__name__}); it will be {again} on the next call"
            )
        # a malformed result, an output-schema mismatch, ...
        return ToolResult.error(redact(f"{label}: the call to {name!r} failed: {type(exc).__name__}: {exc}"))


async def run_session(
    config: McpServerConfig,
    base_dir: Path,
    conn: Connection,
    on_listing: Callable[[McpListing], None],
    redact: Redactor,
    *,
    on_tools_changed: Callable[[], None] = lambda: None,
    on_resource_updated: Callable[[str], None] | None = None,
    task_status: TaskStatus[None],
) -> None:
    """The dedicated task that owns one session: open, initialise and list (then report
    ``started``), and hold the session until ``conn.stop`` is set. The server's
    ``notifications/tools/list_changed`` calls ``on_tools_changed``, its
    ``notifications/resources/updated`` ``on_resource_updated`` (both in this loop).
    With ``on_resource_updated`` (greenroom serve relays), greenroom says it can elicit: the
    server's ``elicitation/create`` goes to the asker of the call (``Connection.elicit``)."""

    async def heard(message: mcp_types.ServerNotification | Exception) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            on_tools_changed()
        elif isinstance(message, mcp_types.ResourceUpdatedNotification) and on_resource_updated is not None:
            on_resource_updated(message.params.uri)

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
            asks = conn.elicit if on_resource_updated is not None else None  # None: it cannot elicit
            session = await stack.enter_async_context(
                ClientSession(Rereading(read), write, message_handler=heard, elicitation_callback=asks, **_SESSION)
            )
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
    """Every page of the server's tools, with what it said about itself at start-up.

    Pipelined, one page ahead: once a page and its cursor are in, the next page is asked
    for (in a task of its own) while this one is taken in (its schemas packed), so the
    server builds a page while greenroom takes in the one before. At most two pages are
    held at once; pages are taken in in order, and a page that failed fails the listing
    when its turn comes, as it did when each page was asked for only after the last.

    The cyclic garbage collector is paused meanwhile (as for a catalog file's read): the
    tools kept pile up, every page's models come and go, and the full collections that
    churn triggers scanned the growing listing again and again (a quarter of a 100,000
    tool listing's time). What a page leaves is freed by reference counting as ever; the
    pause is the process's, so other threads' cyclic garbage waits for the listing's end."""
    with collection_paused():
        return await _list_pages(session, init)


async def _list_pages(session: ClientSession, init: mcp_types.InitializeResult) -> McpListing:
    builder = ListingBuilder(f"MCP server {init.server_info.name if init.server_info else ''!r}")
    cursors: set[str] = set()
    failure: Exception | None = None
    async with anyio.create_task_group() as tg:
        try:
            ahead = _PageFetch.start(tg, session, None)
            for pages in range(1, _MAX_LIST_PAGES + 1):  # a paginator that never ends cannot hang us
                page = await ahead.result()
                cursor = page.cursor
                # a cursor seen before would list the same pages again
                more = bool(cursor) and cursor not in cursors and pages < _MAX_LIST_PAGES
                if more and cursor:
                    cursors.add(cursor)
                    ahead = _PageFetch.start(tg, session, cursor)
                await _take_in(builder, page)
                del page
                if not more:
                    break
        except Exception as exc:
            # raised as it is, not in an exception group; a page asked for ahead is dropped
            failure = exc
            tg.cancel_scope.cancel()
    if failure is not None:
        raise failure
    info = init.server_info
    return builder.listing(
        instructions=init.instructions,
        server_name=info.name if info else None,
        server_version=info.version if info else None,
        listed_at=time.time(),
    )


_INTAKE_CHUNK = 128
"""Tools taken in between two yields to the loop: the request for the next page (sent by
its own task) leaves for the server early in the intake of this one, not after it."""


async def _take_in(builder: ListingBuilder, page: _Page) -> None:
    """A page's tools into ``builder``, in order, yielding to the loop between chunks."""
    tools: list[Any] = page.tools if page.specs is None else page.specs
    add: Callable[[Any], None] = builder.add_mcp if page.specs is None else builder.add_spec
    for start in range(0, len(tools), _INTAKE_CHUNK):
        await anyio.lowlevel.checkpoint()
        for item in tools[start : start + _INTAKE_CHUNK]:
            add(item)


class _Page(NamedTuple):
    tools: list[mcp_types.Tool]
    """The page as the SDK took it."""
    specs: list[McpToolSpec] | None
    """A page the SDK refused, as ``_tools_one_by_one`` made it out (None otherwise)."""
    cursor: str | None


@attrs.define(eq=False)
class _PageFetch:
    """One ``tools/list`` page, asked for by a task of its own: its tools (or, for a page
    the SDK refused, what ``_tools_one_by_one`` made of it) and its cursor, or what went
    wrong, kept for ``result`` to raise in the listing's own task."""

    done: anyio.Event = attrs.field(factory=anyio.Event)
    page: _Page | None = None
    error: Exception | None = None

    @classmethod
    def start(cls, tg: TaskGroup, session: ClientSession, cursor: str | None) -> _PageFetch:
        fetch = cls()
        tg.start_soon(fetch._run, session, cursor)
        return fetch

    async def _run(self, session: ClientSession, cursor: str | None) -> None:
        params = mcp_types.PaginatedRequestParams(cursor=cursor) if cursor else None
        try:
            try:
                listed = await session.list_tools(params=params)
            except pydantic.ValidationError:
                # one tool the SDK refuses (no inputSchema, say) would cost the whole server
                specs, next_cursor = await _tools_one_by_one(session, params)
                self.page = _Page([], specs, next_cursor)
            else:
                self.page = _Page(listed.tools, None, listed.next_cursor)
        except Exception as exc:  # raised by result(), in the listing's task
            self.error = exc
        finally:
            self.done.set()

    async def result(self) -> _Page:
        await self.done.wait()
        if self.error is not None:
            raise self.error
        assert self.page is not None
        return self.page


async def _tools_one_by_one(
    session: ClientSession, params: mcp_types.PaginatedRequestParams | None
) -> tuple[list[McpToolSpec], str | None]:
    """A page the SDK refused, asked for again and checked tool by tool: a tool that MCP
    does not allow is kept as unusable (its name, and why), the rest as usual.

    The SDK checks a ``tools/list`` result whole, in ``send_request``; so this asks again
    without that check, checks each tool against the negotiated revision the way the SDK
    would, and hands the valid ones back to the session (``greenroom.mcp.sdk_private``).
    """
    from mcp_types import methods

    raw = await raw_request(session, mcp_types.ListToolsRequest(params=params))
    version = session.protocol_version or "2025-11-25"
    good: list[mcp_types.Tool] = []
    specs: list[McpToolSpec] = []
    items = raw.get("tools") if isinstance(raw, dict) else None
    if not isinstance(items, list):
        init = session.initialize_result
        server = serving.get() or (init.server_info.name if init is not None else "an MCP server")
        given = isinstance(raw, dict) and "tools" in raw
        what = f"with 'tools' as {json_kind(items)}, not a list" if given else "without 'tools'"
        log.warning("MCP server %r answered tools/list %s: it lists no tools", server, what)
        items = []
    for item in items:
        if not isinstance(item, dict) or not isinstance(item.get("name"), str):
            log.warning("an MCP server listed a tool without a name; it is left out")
            continue
        try:
            methods.validate_server_result("tools/list", version, {"tools": [item]})
            tool = mcp_types.Tool.model_validate(item, by_name=False)
        except (pydantic.ValidationError, KeyError) as exc:
            fault = schema_fault(item) or f"the server listed it in a form MCP does not allow ({_first_problem(exc)})"
            log.warning("MCP tool %r is unusable: %s", item["name"], fault)
            specs.append(McpToolSpec.unusable(item, fault))
            continue
        good.append(tool)
        specs.append(McpToolSpec.from_mcp(tool))
    cursor = raw.get("nextCursor") if isinstance(raw, dict) else None
    cursor = cursor if isinstance(cursor, str) and cursor else None
    page = mcp_types.ListToolsResult(tools=good, next_cursor=cursor)
    absorb_tools(session, page, complete=params is None and cursor is None)
    return specs, cursor


def _first_problem(exc: Exception) -> str:
    if isinstance(exc, pydantic.ValidationError) and exc.errors():
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"][2:]) or "tool"  # past ("tools", 0)
        return f"{where}: {first['msg']}"
    return str(exc)


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
