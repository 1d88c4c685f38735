"""One MCP server's lifecycle: a long-lived session, started on first use, restarted after
faults, and its tools as greenroom ``Tool`` objects. Faults never end a run: a crash, a
hang (bounded by ``timeout``) or a refused call is an error ``ToolResult``; a crashed or
hung server restarts on the next call, one that fails to start is retried after a
growing back-off. A start runs in a task of its own, bounded by ``connect_timeout`` only
(a caller that gives up does not cut it short). Messages name the server and its command
or URL, never environment or header values.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from pathlib import Path
from typing import Any, TypeVar

import anyio
import attrs

from greenroom._support.redact import Redactor
from greenroom.config import McpServerConfig
from greenroom.mcp.cache import read_cached_listing, write_cached_listing
from greenroom.mcp.connection import Connection, list_server, run_session, start_failure_reason
from greenroom.mcp.errors import McpError, McpStartError, describe_target, quiet_stdout_noise, server_secrets, serving
from greenroom.mcp.following import ListFollower
from greenroom.mcp.host.thread import CLOSE_TIMEOUT, McpHost, asked_in_caller_loop, in_caller_loop
from greenroom.mcp.listing import McpListing
from greenroom.mcp.naming import ToolNamer
from greenroom.mcp.results import masked, to_tool_result
from greenroom.mcp.sdk import ClientSession
from greenroom.mcp.tool import ListedTools, McpTool
from greenroom.tools import ToolDescriptor, ToolResult
from greenroom.tools.base import Progress, call_asker

log = logging.getLogger(__name__)
T = TypeVar("T")

_PROBE_TIMEOUT = 5.0  # how long a ping may take to prove a server that timed out a call is alive
# After a failed start, later calls fail fast for this many seconds (doubling, capped), so
# a broken server does not cost a full connect timeout on every call.
_BACKOFF_FIRST, _BACKOFF_MAX = 1.0, 30.0


@attrs.define(eq=False)
class _Start:
    """A start in progress, in a host task of its own; callers wait for ``done``."""

    scope: anyio.CancelScope = attrs.field(factory=anyio.CancelScope)
    done: anyio.Event = attrs.field(factory=anyio.Event)
    conn: Connection | None = None
    error: McpStartError | None = None


class McpServer:
    """One MCP server: a long-lived session, started on first use and restarted after faults.

    ``base_dir`` is the working folder of a stdio server (relative commands and arguments
    resolve against it) and part of the cache key. ``host`` shares one background loop
    among servers (default: the server owns a host of its own). ``namer`` assigns tool
    names across servers (default: this server's ``naming`` alone).
    """

    def __init__(
        self,
        config: McpServerConfig,
        base_dir: str | Path = ".",
        *,
        host: McpHost | None = None,
        namer: ToolNamer | None = None,
    ) -> None:
        if bool(config.command) == bool(config.url):
            raise McpError(
                config.name, f"MCP server {config.name!r}: set exactly one of 'command' (stdio) or 'url' (HTTP)"
            )
        self.config = config
        self.name = config.name
        self.base_dir = Path(base_dir)
        self._owns_host = host is None
        self._host = host or McpHost()
        self._namer = namer or ToolNamer()
        # what the server says may quote its env, its headers (an auth header's token without its scheme, a Basic
        # header's pair) or what its URL carries (user info, a ?token=): hidden in every form. Its errors and stderr
        # hide every env and header value; its results, which quote ordinary words, hide the credentials among them.
        self.secrets = server_secrets(config)
        self._redact = Redactor(server_secrets(config, every_value=True))
        self._redact_result = Redactor(self.secrets)
        self._listing: McpListing | None = read_cached_listing(config, base_dir)
        self._listed = ListedTools()
        self._conn: Connection | None = None  # host-loop state from here on
        self._starting: _Start | None = None
        self._retiring: set[Connection] = set()  # replaced connections still shutting down
        self._lock: anyio.Lock | None = None
        self._failures, self._retry_after = 0, 0.0  # starts failed in a row; no start before then
        self._last_error: McpStartError | None = None
        self.starts = 0  # how many sessions were opened (tests and diagnostics)
        self.on_change: Callable[[McpServer], None] = lambda server: None  # told (host thread) of changed tools
        self.on_resource_updated: Callable[[McpServer, str], None] | None = None  # set by a relay (host thread)
        self.then: Callable[[ClientSession], Coroutine[Any, Any, None]] | None = None  # after each start (skills)
        follow = functools.partial(ListFollower, timeout=config.timeout, redact=self._redact)
        self._follower = follow(self.name, self._relist_live, self._host)
        self._again = "reconnected" if config.url else "restarted"

    def __repr__(self) -> str:
        return f"<McpServer {self.name} ({describe_target(self.config)})>"

    # -- what is known without starting --------------------------------------------------
    @property
    def group_id(self) -> str:
        return f"mcp:{self.name}"

    @property
    def listing(self) -> McpListing | None:
        """The latest listing: live once the server ran, else the cached one (or None)."""
        return self._listing

    @property
    def instructions(self) -> str | None:
        return self._listing.instructions if self._listing else None

    @property
    def connected(self) -> bool:
        return self._conn is not None and self._conn.broken is None

    @property
    def start_failed(self) -> bool:
        """Its last start failed, and no start succeeded since (it is retried after a back-off)."""
        return self._last_error is not None

    def tools(self) -> list[McpTool]:
        """Tools from the latest listing (empty when the server was never listed)."""
        return self._listed.of(self, self._listing, self._namer)

    def descriptors(self) -> list[ToolDescriptor]:
        return [t.descriptor for t in self.tools()]

    def call_budget(self) -> float:
        """Seconds a call may take, seen from its caller: the server's ``timeout`` for the
        call itself, plus, when a fault means the server must first be checked or started
        again, the bound of each such step (a ping, a start's ``connect_timeout``). A first
        start is not counted: it goes on when its caller gives up, for the next call."""
        cfg = self.config
        conn = self._conn
        if conn is not None and conn.broken is None and conn.suspect:
            return cfg.timeout + self._probe_timeout() + cfg.connect_timeout
        restarting = conn is not None or self.starts > 0 or self._last_error is not None
        if self._starting is not None or (restarting and not self.connected):
            return cfg.timeout + cfg.connect_timeout
        return cfg.timeout

    # -- lifecycle (any event loop) ------------------------------------------------------
    async def start(self) -> McpListing:
        """Start the server (if not running), list its tools, return the listing; an
        ``McpStartError`` names the server and its command or URL."""
        await self._host.call(self._ensure_connected)
        assert self._listing is not None
        return self._listing

    def start_blocking(self) -> McpListing:
        """``start()`` for synchronous callers (e.g. while a runtime is built)."""
        self._host.call_blocking(self._ensure_connected)
        assert self._listing is not None
        return self._listing

    async def list_tools(self, *, refresh: bool = False) -> list[McpTool]:
        """Start if needed and return the tools (``refresh`` asks the server again)."""
        await (self._host.call(self._relist) if refresh else self.start())
        return self.tools()

    async def with_session(self, use: Callable[[ClientSession], Awaitable[T]]) -> T:
        """``use(session)`` with the live SDK session (started if need be), in the loop that
        owns it: for what is passed through (prompts, resources, completions, subscriptions)."""

        async def run() -> T:
            conn = await self._ensure_connected()
            assert conn.session is not None
            return await use(conn.session)

        return await self._host.call(run)

    def offers(self, capability: str) -> bool:
        """Whether it said it has ``capability`` (``prompts``...); True before it started."""
        session = self._conn.session if self._conn is not None else None
        init = session.initialize_result if session is not None else None
        return init is None or getattr(init.capabilities, capability, None) is not None

    async def call_tool(
        self,
        name: str,
        arguments: Mapping[str, Any],
        *,
        timeout: float | None = None,
        progress: Progress | None = None,
        meta: Mapping[str, Any] | None = None,
    ) -> ToolResult:
        """Call the server's tool ``name`` (its MCP name). Never raises for server faults:
        they come back as error results. The server's progress notifications go to
        ``progress``, in the caller's event loop; ``meta`` is sent as ``params._meta``."""
        limit, sent = self.config.timeout if timeout is None else timeout, dict(meta) if meta else None
        ask = asked_in_caller_loop(call_asker.get())  # whom the server's elicitation/create reaches
        try:
            return await self._host.call(self._call, name, dict(arguments), limit, in_caller_loop(progress), sent, ask)
        except anyio.get_cancelled_exc_class():
            # The caller gave up (its own timeout): the server may be hung. Marked here and now:
            # the host loop hears of it later than the next call asks for its budget.
            if (conn := self._conn) is not None and conn.broken is None:
                conn.suspect = True
            raise

    async def aclose(self) -> None:
        """Close the session (the server process ends) and, if owned, the host thread."""
        with anyio.CancelScope(shield=True):
            if self._host.running:
                await self._host.call(self._disconnect)
            if self._owns_host:
                await self._host.astop()

    def close(self) -> None:
        """``aclose()`` for synchronous callers."""
        if self._host.running:
            self._host.call_blocking(self._disconnect)
        if self._owns_host:
            self._host.stop()

    # -- host loop ------------------------------------------------------------------------
    def _lock_(self) -> anyio.Lock:
        if self._lock is None:
            self._lock = anyio.Lock()
        return self._lock

    async def _ensure_connected(self) -> Connection:
        async with self._lock_():
            conn = self._conn
            if conn is not None and conn.broken is None and conn.suspect:
                await self._probe(conn)
            if conn is not None and conn.broken is None:
                return conn
            if conn is not None:
                # A dead or hung server can take seconds to shut down (the SDK waits, then
                # escalates to SIGTERM and SIGKILL); the replacement need not wait for that.
                self._retire(conn)
                self._conn = None
            start = self._starting
            if start is None:
                if self._last_error is not None and time.monotonic() < self._retry_after:
                    raise self._last_error
                start = self._starting = _Start()
                self._host.task_group.start_soon(self._start, start)
        # Outside the lock, and only waiting: a caller that gives up leaves the start running.
        await start.done.wait()
        if start.conn is None:
            assert start.error is not None
            raise start.error
        return start.conn

    async def _start(self, start: _Start) -> None:
        """Open a session (bounded by ``connect_timeout``) for whoever waits on ``start``."""
        try:
            with start.scope:
                start.conn = await self._connect()
        except McpStartError as exc:
            start.error = exc
            self._failures += 1
            self._last_error = exc
            # counted from the failure, not the attempt: a start that timed out took
            # connect_timeout, longer than the first back-offs
            backoff = min(_BACKOFF_MAX, _BACKOFF_FIRST * 2 ** (self._failures - 1))
            self._retry_after = time.monotonic() + backoff
        finally:
            if start.conn is not None:
                self._failures, self._last_error = 0, None
                self._conn = start.conn
            elif start.error is None:  # cancelled: the server or its host is closing
                start.error = McpStartError(self.name, f"MCP server {self.name!r} was closed while it started")
            self._starting = None
            start.done.set()

    def _probe_timeout(self) -> float:
        return min(_PROBE_TIMEOUT, self.config.timeout, self.config.connect_timeout)

    async def _probe(self, conn: Connection) -> None:
        """A call timed out: keep the session if the server still answers a ping."""
        assert conn.session is not None
        try:
            with anyio.fail_after(self._probe_timeout()):
                await conn.session.send_ping()
            conn.suspect = False
        except Exception:
            conn.broken = "it stopped answering"
            log.warning("MCP server %r stopped answering; restarting it", self.name)

    async def _connect(self) -> Connection:
        conn = Connection.for_server(self.config)
        quiet_stdout_noise()
        named = serving.set(self.name)  # the session's tasks (the SDK's reader too) know whose they are
        try:
            with anyio.fail_after(self.config.connect_timeout):
                told = None if self.on_resource_updated is None else functools.partial(self.on_resource_updated, self)
                changed = self._follower.changed
                session = functools.partial(run_session, on_tools_changed=changed, on_resource_updated=told)
                await self._host.task_group.start(
                    session, self.config, self.base_dir, conn, self._set_listing, self._redact
                )
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            reason = start_failure_reason(self.config, exc)
            tail = conn.stderr_tail(self._redact)
            if conn.errlog is not None:
                conn.errlog.close()
            msg = f"MCP server {self.name!r} failed to start ({describe_target(self.config)}): {reason}"
            if tail:
                msg += f"\nServer stderr (last lines):\n{tail}"
            raise McpStartError(self.name, msg, self._redact) from None
        finally:
            serving.reset(named)
        self.starts += 1
        if self.then is not None and conn.session is not None:  # beside the caller; it lets nothing escape
            self._host.task_group.start_soon(self.then, conn.session)
        return conn

    def _set_listing(self, listing: McpListing) -> None:
        before, self._listing = self._listing, listing
        write_cached_listing(self.config, self.base_dir, listing)
        if before is not None and not listing.same_tools(before):
            self.on_change(self)

    async def _relist(self, conn: Connection | None = None) -> None:
        conn = conn or await self._ensure_connected()
        assert conn.session is not None
        init = conn.session.initialize_result
        assert init is not None
        self._set_listing(await list_server(conn.session, init))

    async def _relist_live(self) -> bool:
        """List the live session again (``ListFollower``); False when there is none."""
        conn = self._conn
        if conn is None or conn.broken is not None:
            return False
        await self._relist(conn)
        return True

    async def _call(
        self, name: str, arguments: dict[str, Any], timeout: float, progress: Any, meta: Any, ask: Any
    ) -> ToolResult:
        try:
            conn = await self._ensure_connected()
        except McpStartError as exc:
            return ToolResult.error(str(exc))
        assert conn.session is not None
        try:
            with anyio.fail_after(timeout), conn.asking(ask):
                result = await conn.session.call_tool(name, arguments, progress_callback=progress, meta=meta)
        except anyio.get_cancelled_exc_class():
            # The caller gave up (its own timeout, or the run was cancelled): the server
            # may be hung, so check it before the next call.
            conn.suspect = True
            raise
        except Exception as exc:
            label = f"MCP server {self.name!r}"
            return conn.call_failed(exc, label, name, timeout, again=self._again, redact=self._redact)
        await self._follower.settled()  # its tools changed during the call: listed before the next step
        # a server may echo what it was given (a token from its env, the Basic header of
        # its URL's credentials) in a result the model, the trace and the terminal would show
        return masked(to_tool_result(result), self._redact_result)

    def _retire(self, conn: Connection) -> None:
        conn.stop.set()
        self._retiring.add(conn)
        self._host.task_group.start_soon(self._finish_retiring, conn)

    async def _finish_retiring(self, conn: Connection) -> None:
        try:
            await self._close_connection(conn)
        finally:
            self._retiring.discard(conn)

    async def _disconnect(self) -> None:
        async with self._lock_():
            start = self._starting
            if start is not None:  # no session may open after this one closed
                start.scope.cancel()
                with anyio.CancelScope(shield=True):
                    await start.done.wait()
            conn, self._conn = self._conn, None
            if conn is not None:
                await self._close_connection(conn)
            for old in list(self._retiring):
                await self._close_connection(old)

    async def _close_connection(self, conn: Connection) -> None:
        conn.stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(CLOSE_TIMEOUT):
            await conn.done.wait()
        if conn.errlog is not None:
            conn.errlog.close()


__all__ = ["McpServer", "McpTool"]
