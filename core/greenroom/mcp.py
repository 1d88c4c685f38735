"""MCP servers as a tool source: long-lived client sessions, cached listings, tool groups.

Each ``[[tools.mcp]]`` server becomes an :class:`McpServer`: a stdio subprocess or a
streamable-HTTP endpoint spoken to through the official ``mcp`` SDK (2.x). Its tools are
:class:`McpTool` objects (greenroom's ``Tool`` protocol) named ``<server>__<tool>`` (or the
bare tool name), and a deferred server is one :class:`~greenroom.tools.groups.ToolGroup`
(``mcp:<server>``) whose catalog comes from a listing cached on disk, so a later process
builds the catalog without starting the server.

Where the sessions live: the SDK's transports and ``ClientSession`` are async context
managers that must be entered and exited in the same task, and a session must outlive
any one tool call. A greenroom runtime, however, is built synchronously and may be used
from several event loops in turn (``anyio.run`` per command, per test), so no caller task
is guaranteed to live as long as a session. Each connection therefore runs in a dedicated
task of an anyio task group inside one background thread with its own event loop (the
"host"); callers reach it through an anyio ``BlockingPortal``, whose cross-loop calls
propagate cancellation both ways. A hung server cannot block the caller's loop, and a
caller's timeout never tears an SDK cancel scope.

Faults never end a run: a crash, a hang (bounded by the server's ``timeout``) or a refused
call becomes an error ``ToolResult``; a crashed or hung server is restarted on the next
call. Error messages name the server and its command or URL, never environment or header
values (they are redacted wherever greenroom quotes text it did not write).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import re
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import IO, Any, Literal, TypeVar, cast

import anyio
import anyio.to_thread
import attrs
from anyio.abc import TaskGroup, TaskStatus
from anyio.from_thread import BlockingPortal

from greenroom.config import McpServerConfig
from greenroom.redact import public_url
from greenroom.storage import state_dir, write_json_atomic
from greenroom.tools import Tool, ToolCallContext, ToolDescriptor, ToolResult
from greenroom.tools.groups import ToolGroup

try:
    import httpx2
    import mcp_types
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError
except ImportError as _exc:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        f"MCP tool sources need the official MCP SDK (2.x): pip install 'greenroom[mcp]' ({_exc})"
    ) from _exc

if sys.version_info >= (3, 11):
    _BaseExceptionGroup = BaseExceptionGroup  # noqa: F821 - builtin from 3.11
else:  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup as _BaseExceptionGroup

log = logging.getLogger("greenroom.mcp")

T = TypeVar("T")

CACHE_FORMAT = "greenroom.mcp-cache/1"
CLIENT_INFO = mcp_types.Implementation(name="greenroom", version="0")

# Tool names must satisfy the strictest provider rule (OpenAI, Anthropic: [A-Za-z0-9_-],
# OpenAI: at most 64 characters).
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_MAX_NAME = 64
# How long a ping may take to prove a server that timed out a call is still alive.
_PROBE_TIMEOUT = 5.0
# Upper bound for closing one connection (the SDK's own stdio shutdown is bounded by ~6 s).
_CLOSE_TIMEOUT = 10.0
# After a failed start, later calls fail fast for this many seconds (doubling, capped), so
# a broken server does not cost a full connect timeout on every call.
_BACKOFF_FIRST, _BACKOFF_MAX = 1.0, 30.0
_MAX_LIST_PAGES = 100
_STDERR_TAIL = 1500


# ----------------------------------------------------------------------------- errors


class McpError(RuntimeError):
    """A problem with an MCP server, phrased for the user (no secrets inside)."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(message)


class McpStartError(McpError):
    """An MCP server could not be started, connected to, initialised or listed."""


# ----------------------------------------------------------------------------- tool specs


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


# ----------------------------------------------------------------------------- naming


def safe_name(text: str) -> str:
    """``text`` with every character a provider would reject replaced by ``_``."""
    return _UNSAFE_NAME_CHARS.sub("_", text) or "_"


def prefixed_name(server: str, tool: str) -> str:
    return f"{safe_name(server)}__{safe_name(tool)}"


def _fit(name: str) -> str:
    """``name`` cut to the provider limit, with a hash of the whole name so that two long
    names sharing a beginning stay distinct."""
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: _MAX_NAME - 9]}_{digest}"


class ToolNamer:
    """Assigns model-facing names to MCP tools across servers.

    ``prefixed`` servers give ``<server>__<tool>``. ``bare`` servers give the tool's own
    name when no other tool (another server's, or a reserved name such as a Python tool)
    has it; a colliding tool falls back to its prefixed name, with a warning. Names are
    assigned once per (server, tool) and kept, so a re-listing never renames a tool.
    """

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._owner: dict[str, tuple[str, str] | None] = {n: None for n in reserved}
        self._assigned: dict[tuple[str, str], str] = {}

    def name(self, server: str, tool: str, naming: Literal["prefixed", "bare"]) -> str:
        key = (server, tool)
        got = self._assigned.get(key)
        if got is not None:
            return got
        name = _fit(prefixed_name(server, tool))
        if naming == "bare":
            bare = _fit(safe_name(tool))
            if bare in self._owner:
                owner = self._owner[bare]
                who = f"MCP server {owner[0]!r}" if owner else "another tool"
                log.warning("MCP tool %r of server %r is named %r (%s has the bare name)", tool, server, name, who)
            else:
                name = bare
        if name in self._owner and self._owner[name] != key:
            # Two tools of one server that differ only in unsafe characters: keep both callable.
            i = 2
            while _fit(f"{name}_{i}") in self._owner:
                i += 1
            name = _fit(f"{name}_{i}")
        self._owner[name] = key
        self._assigned[key] = name
        return name


# ----------------------------------------------------------------------------- secrets


class _Redactor:
    """Removes configured secret values (env and header values) from text greenroom quotes."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret containing another is removed whole; very short values
        # ("1", "on") are not secrets and would garble every message.
        self._values = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, "***")
        return text


def describe_target(config: McpServerConfig) -> str:
    """``command: ...`` or ``url: ...`` for messages (no env, no headers, no URL userinfo/query)."""
    if config.url:
        return f"url: {public_url(config.url)}"
    return f"command: {shlex.join([config.command or '', *config.args])}"


# ----------------------------------------------------------------------------- the cache


def cache_key(config: McpServerConfig, base_dir: str | Path = ".") -> str:
    """A hash of what identifies the server's tool set: command, args and working folder,
    or the URL. Env and headers are left out: they hold secrets, and rotating a token
    does not change the tools."""
    if config.url:
        ident: dict[str, Any] = {"url": config.url}
    else:
        ident = {"command": config.command, "args": list(config.args), "cwd": str(Path(base_dir).resolve())}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


def cache_path(config: McpServerConfig, base_dir: str | Path = ".") -> Path:
    return state_dir() / "mcp-cache" / f"{cache_key(config, base_dir)}.json"


def read_cached_listing(config: McpServerConfig, base_dir: str | Path = ".") -> McpListing | None:
    """The listing saved by an earlier process, or None (missing or unreadable)."""
    path = cache_path(config, base_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            return None
        return McpListing(
            tools=tuple(McpToolSpec.from_json(t) for t in data.get("tools", [])),
            instructions=data.get("instructions"),
            server_name=data.get("server_name"),
            server_version=data.get("server_version"),
            listed_at=float(data.get("listed_at", 0.0)),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("ignoring unreadable MCP listing cache %s: %s", path, exc)
        return None


def write_cached_listing(config: McpServerConfig, base_dir: str | Path, listing: McpListing) -> None:
    data = {
        "format": CACHE_FORMAT,
        "server": config.name,
        "server_name": listing.server_name,
        "server_version": listing.server_version,
        "instructions": listing.instructions,
        "listed_at": listing.listed_at,
        "tools": [t.to_json() for t in listing.tools],
    }
    try:
        write_json_atomic(cache_path(config, base_dir), data)
    except OSError as exc:  # a read-only state folder costs a restart later, nothing more
        log.warning("could not write the MCP listing cache for %r: %s", config.name, exc)


# ----------------------------------------------------------------------------- results


def to_tool_result(result: mcp_types.CallToolResult) -> ToolResult:
    """An MCP tool result as the model will read it.

    Text parts are joined; structured content is kept in ``structured`` (and rendered as
    JSON when there is no text); images, audio and resources become short placeholders
    (embedded text resources keep their text); ``isError`` becomes ``is_error``.
    """
    parts: list[str] = []
    for block in result.content:
        if isinstance(block, mcp_types.TextContent):
            parts.append(block.text)
        elif isinstance(block, mcp_types.ImageContent):
            parts.append(f"[image: {block.mime_type}, {_b64_size(block.data)} bytes]")
        elif isinstance(block, mcp_types.AudioContent):
            parts.append(f"[audio: {block.mime_type}, {_b64_size(block.data)} bytes]")
        elif isinstance(block, mcp_types.ResourceLink):
            label = block.title or block.name
            parts.append(
                f"[resource link: {label} <{block.uri}>" + (f" ({block.mime_type})]" if block.mime_type else "]")
            )
        elif isinstance(block, mcp_types.EmbeddedResource):
            res = block.resource
            mime = f" ({res.mime_type})" if res.mime_type else ""
            if isinstance(res, mcp_types.TextResourceContents):
                parts.append(f"[resource <{res.uri}>{mime}]\n{res.text}")
            else:
                parts.append(f"[resource <{res.uri}>{mime}, {_b64_size(res.blob)} bytes]")
        else:  # a content type newer than this code
            parts.append(f"[{getattr(block, 'type', type(block).__name__)} content]")
    structured = result.structured_content
    text = "\n".join(parts)
    if not parts and structured is not None:
        text = json.dumps(structured, sort_keys=True, ensure_ascii=False, default=str)
    if not text and result.is_error:
        text = "the tool reported an error without details"
    return ToolResult(content=text, is_error=bool(result.is_error), structured=structured)


def _b64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


# ----------------------------------------------------------------------------- the host


class McpHost:
    """A daemon thread whose event loop owns MCP connections (see the module docstring).

    Started on first use; ``stop()`` ends it. Callers in any event loop use ``call``;
    synchronous callers (building a runtime) use ``call_blocking``.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._portal: BlockingPortal | None = None
        self._tg: TaskGroup | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._portal is not None

    def _ensure(self) -> BlockingPortal:
        with self._lock:
            if self._portal is not None:
                return self._portal
            ready = threading.Event()
            failure: list[BaseException] = []

            async def main() -> None:
                async with BlockingPortal() as portal, anyio.create_task_group() as tg:
                    self._portal, self._tg = portal, tg
                    ready.set()
                    await portal.sleep_until_stopped()
                    tg.cancel_scope.cancel()

            def run() -> None:
                try:
                    anyio.run(main)
                except BaseException as exc:  # pragma: no cover - the loop itself failed
                    failure.append(exc)
                    ready.set()
                finally:
                    self._portal = self._tg = None

            # Daemon: a program that forgets to close its runtime still exits; its stdio
            # servers then see their stdin close and exit too.
            thread = threading.Thread(target=run, name="greenroom-mcp", daemon=True)
            thread.start()
            ready.wait()
            if failure or self._portal is None:  # pragma: no cover
                raise RuntimeError(f"the MCP host loop did not start: {failure[:1]}")
            self._thread = thread
            return self._portal

    @property
    def task_group(self) -> TaskGroup:
        """The host's task group (only valid inside the host loop)."""
        assert self._tg is not None, "the MCP host is not running"
        return self._tg

    async def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Await ``func(*args)`` in the host loop; cancelling the caller cancels it there."""
        portal = self._ensure()
        call_async = getattr(portal, "call_async", None)
        if call_async is not None:  # anyio >= 4.16
            return cast(T, await call_async(func, *args, abandon_on_cancel=True))
        future = portal.start_task_soon(func, *args)  # pragma: no cover - older anyio
        try:  # pragma: no cover
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():  # pragma: no cover
            future.cancel()
            raise

    def call_blocking(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``func(*args)`` in the host loop and wait (from synchronous code)."""
        return self._ensure().call(func, *args)

    def stop(self) -> None:
        """Stop the loop (cancelling whatever still runs there) and join the thread."""
        with self._lock:
            portal, thread = self._portal, self._thread
            self._thread = None
        if portal is not None:
            with contextlib.suppress(RuntimeError):  # already stopping
                portal.call(portal.stop, True)
        if thread is not None and thread is not threading.current_thread():
            thread.join(_CLOSE_TIMEOUT)

    async def astop(self) -> None:
        await anyio.to_thread.run_sync(self.stop)


# ----------------------------------------------------------------------------- a connection


@attrs.define(eq=False)
class _Connection:
    """One live session; only the host loop touches it."""

    session: ClientSession | None = None
    errlog: IO[str] | None = None
    stop: anyio.Event = attrs.field(factory=anyio.Event)
    done: anyio.Event = attrs.field(factory=anyio.Event)
    broken: str | None = None  # why the connection is unusable (then it is replaced)
    suspect: bool = False  # a call timed out or was abandoned: probe before reuse

    def stderr_tail(self, redact: _Redactor) -> str:
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


# ----------------------------------------------------------------------------- the server


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
        # an auth header's credentials are redacted on their own too ("Bearer <token>":
        # servers quote the token without its scheme)
        header_parts = [p for v in config.headers.values() for p in v.split()[1:]]
        self._redact = _Redactor([*config.env.values(), *config.headers.values(), *header_parts])
        self._listing: McpListing | None = read_cached_listing(config, base_dir)
        self._listing_is_live = False
        self._tools: dict[str, McpTool] = {}
        # host-loop state
        self._conn: _Connection | None = None
        self._retiring: set[_Connection] = set()  # replaced connections still shutting down
        self._lock: anyio.Lock | None = None
        self._failures = 0
        self._retry_after = 0.0
        self._last_error: McpStartError | None = None
        self.starts = 0  # how many sessions were opened (tests and diagnostics)
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
        conn = self._conn
        return conn is not None and conn.broken is None

    def tools(self) -> list[McpTool]:
        """Tools from the latest listing (empty when the server was never listed)."""
        if self._listing is None:
            return []
        out = []
        for spec in self._listing.tools:
            name = self._namer.name(self.name, spec.name, self.config.naming)
            tool = self._tools.get(spec.name)
            if tool is None or tool.spec != spec:
                tool = self._tools[spec.name] = McpTool(self, spec, name)
            out.append(tool)
        return out

    def descriptors(self) -> list[ToolDescriptor]:
        return [t.descriptor for t in self.tools()]

    # -- lifecycle (any event loop) ------------------------------------------------------
    async def start(self) -> McpListing:
        """Start the server (if not running), list its tools, return the listing.

        Raises McpStartError naming the server and its command or URL.
        """
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
        await self.start()
        if refresh:
            await self._host.call(self._relist)
        return self.tools()

    async def call_tool(self, name: str, arguments: Mapping[str, Any], *, timeout: float | None = None) -> ToolResult:
        """Call the server's tool ``name`` (its MCP name). Never raises for server faults:
        they come back as error results."""
        limit = self.config.timeout if timeout is None else timeout
        return await self._host.call(self._call, name, dict(arguments), limit)

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

    async def _ensure_connected(self) -> _Connection:
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
            if self._last_error is not None and time.monotonic() < self._retry_after:
                raise self._last_error
            try:
                conn = await self._connect()
            except McpStartError as exc:
                self._failures += 1
                self._last_error = exc
                # counted from the failure, not the attempt: a start that timed out took
                # connect_timeout, longer than the first back-offs
                backoff = min(_BACKOFF_MAX, _BACKOFF_FIRST * 2 ** (self._failures - 1))
                self._retry_after = time.monotonic() + backoff
                raise
            self._failures, self._last_error = 0, None
            self._conn = conn
            return conn

    async def _probe(self, conn: _Connection) -> None:
        """A call timed out: keep the session if the server still answers a ping."""
        assert conn.session is not None
        try:
            with anyio.fail_after(min(_PROBE_TIMEOUT, self.config.timeout, self.config.connect_timeout)):
                await conn.session.send_ping()
            conn.suspect = False
        except Exception:
            conn.broken = "it stopped answering"
            log.warning("MCP server %r stopped answering; restarting it", self.name)

    async def _connect(self) -> _Connection:
        conn = _Connection()
        if not self.config.url:
            # Owned here, not by the connection task, so the server's last words are still
            # readable after the task ended (a failed start, a crash).
            conn.errlog = tempfile.TemporaryFile("w+", encoding="utf-8", errors="replace", prefix="greenroom-mcp-")
        try:
            with anyio.fail_after(self.config.connect_timeout):
                await self._host.task_group.start(self._run_connection, conn)
        except BaseException as exc:
            if isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            reason = self._start_failure_reason(exc)
            tail = conn.stderr_tail(self._redact)
            if conn.errlog is not None:
                conn.errlog.close()
            msg = f"MCP server {self.name!r} failed to start ({describe_target(self.config)}): {reason}"
            if tail:
                msg += f"\nServer stderr (last lines):\n{tail}"
            raise McpStartError(self.name, self._redact(msg)) from None
        self.starts += 1
        return conn

    def _start_failure_reason(self, exc: BaseException) -> str:
        leaf = _leaf(exc)
        if isinstance(leaf, TimeoutError):
            return f"no answer within {self.config.connect_timeout:g} s (connect_timeout)"
        if isinstance(leaf, FileNotFoundError):
            return f"command not found: {self.config.command!r}"
        if isinstance(leaf, PermissionError):
            return f"command not executable: {self.config.command!r}"
        if isinstance(leaf, MCPError) and leaf.code == mcp_types.CONNECTION_CLOSED:
            return "the server closed the connection before the MCP handshake completed (did it exit?)"
        if isinstance(leaf, httpx2.HTTPError):
            return f"HTTP error: {type(leaf).__name__}: {leaf}"
        return f"{type(leaf).__name__}: {leaf}"

    async def _run_connection(self, conn: _Connection, *, task_status: TaskStatus[None]) -> None:
        """The dedicated task that owns one session: the SDK's context managers are entered
        and exited here, and nowhere else."""
        started = False
        try:
            async with contextlib.AsyncExitStack() as stack:
                if self.config.url:
                    client = await stack.enter_async_context(
                        httpx2.AsyncClient(
                            headers=dict(self.config.headers),
                            timeout=httpx2.Timeout(self.config.connect_timeout, read=max(300.0, self.config.timeout)),
                        )
                    )
                    read, write = await stack.enter_async_context(
                        streamable_http_client(self.config.url, http_client=client)
                    )
                else:
                    params = StdioServerParameters(
                        command=self.config.command or "",
                        args=list(self.config.args),
                        env=dict(self.config.env) or None,
                        cwd=str(self.base_dir),
                    )
                    read, write = await stack.enter_async_context(stdio_client(params, errlog=cast(Any, conn.errlog)))
                session = await stack.enter_async_context(ClientSession(read, write, client_info=CLIENT_INFO))
                init = await session.initialize()
                listing = await self._list(session, init)
                conn.session = session
                self._set_listing(listing)
                started = True
                task_status.started()
                await conn.stop.wait()
        except BaseException as exc:
            if not started or isinstance(exc, anyio.get_cancelled_exc_class()):
                raise
            # After start-up nothing may escape: an error here would cancel the host's
            # task group and with it every other server.
            log.warning("MCP server %r session ended: %s", self.name, self._redact(f"{_leaf(exc)!r}"))
        finally:
            conn.broken = conn.broken or "closed"
            conn.done.set()

    async def _list(self, session: ClientSession, init: mcp_types.InitializeResult) -> McpListing:
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

    def _set_listing(self, listing: McpListing) -> None:
        self._listing = listing
        self._listing_is_live = True
        write_cached_listing(self.config, self.base_dir, listing)

    async def _relist(self) -> None:
        conn = await self._ensure_connected()
        assert conn.session is not None
        init = conn.session.initialize_result
        assert init is not None
        self._set_listing(await self._list(conn.session, init))

    async def _call(self, name: str, arguments: dict[str, Any], timeout: float) -> ToolResult:
        label = f"MCP server {self.name!r}"
        try:
            conn = await self._ensure_connected()
        except McpStartError as exc:
            return ToolResult.error(str(exc))
        assert conn.session is not None
        try:
            with anyio.fail_after(timeout):
                result = await conn.session.call_tool(name, arguments)
        except TimeoutError:
            conn.suspect = True
            return ToolResult.error(
                f"{label} did not answer the call to {name!r} within {timeout:g} s; "
                f"it will be checked, and {self._again} if hung, on the next call"
            )
        except anyio.get_cancelled_exc_class():
            # The caller gave up (its own timeout, or the run was cancelled): the server
            # may be hung, so check it before the next call.
            conn.suspect = True
            raise
        except MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:
                conn.broken = "connection closed"
                tail = conn.stderr_tail(self._redact)
                msg = (
                    f"{label} closed the connection during the call to {name!r} (did the server exit?); "
                    f"it will be {self._again} on the next call"
                )
                if tail:
                    msg += f"\nServer stderr (last lines):\n{tail}"
                return ToolResult.error(self._redact(msg))
            return ToolResult.error(self._redact(f"{label} rejected the call to {name!r}: {exc.message}"))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, anyio.EndOfStream, OSError) as exc:
            conn.broken = type(exc).__name__
            return ToolResult.error(
                f"{label} is unreachable ({type(exc).__name__}); it will be {self._again} on the next call"
            )
        except Exception as exc:  # a malformed result, an output-schema mismatch, ...
            return ToolResult.error(self._redact(f"{label}: the call to {name!r} failed: {type(exc).__name__}: {exc}"))
        return to_tool_result(result)

    def _retire(self, conn: _Connection) -> None:
        conn.stop.set()
        self._retiring.add(conn)
        self._host.task_group.start_soon(self._finish_retiring, conn)

    async def _finish_retiring(self, conn: _Connection) -> None:
        try:
            await self._close_connection(conn)
        finally:
            self._retiring.discard(conn)

    async def _disconnect(self) -> None:
        async with self._lock_():
            conn, self._conn = self._conn, None
            if conn is not None:
                await self._close_connection(conn)
            for old in list(self._retiring):
                await self._close_connection(old)

    async def _close_connection(self, conn: _Connection) -> None:
        conn.stop.set()
        with anyio.CancelScope(shield=True), anyio.move_on_after(_CLOSE_TIMEOUT):
            await conn.done.wait()
        if conn.errlog is not None:
            conn.errlog.close()


def _leaf(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups."""
    while isinstance(exc, _BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc


# ----------------------------------------------------------------------------- the tool


def _parameters(schema: Mapping[str, Any]) -> dict[str, Any]:
    """A tool's input schema as the providers take it: Anthropic requires ``"type":
    "object"`` at the top, which some servers leave out (the MCP spec requires it too)."""
    params = dict(schema)
    if "type" not in params:
        params = {"type": "object", **params}
    return params


class McpTool:
    """A tool of an MCP server, as greenroom's ``Tool``."""

    def __init__(self, server: McpServer, spec: McpToolSpec, name: str) -> None:
        self.server = server
        self.spec = spec
        self._descriptor = ToolDescriptor(
            name=name,
            description=spec.description,
            parameters=_parameters(spec.input_schema),
            group=server.group_id,
        )

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    @property
    def timeout(self) -> float | None:
        return self.server.config.timeout

    @property
    def mcp_name(self) -> str:
        return self.spec.name

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        return await self.server.call_tool(self.spec.name, args)

    def __repr__(self) -> str:
        return f"<mcp tool {self._descriptor.name} ({self.server.name}/{self.spec.name})>"


# ----------------------------------------------------------------------------- many servers


class McpToolset:
    """The MCP servers of one runtime: their groups, their eager tools, one close.

    ``base_dir`` is the servers' working folder; ``base_dirs`` overrides it per server
    name (servers declared in different config files). ``reserved_names`` are the names
    of the runtime's other tools (bare names never take them). Nothing starts in the
    constructor; ``prepare()`` (or ``prepare_blocking()`` from synchronous code) lists the
    servers that have no cached listing and starts the ``start = "eager"`` ones.
    """

    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        base_dir: str | Path = ".",
        *,
        base_dirs: Mapping[str, str | Path] | None = None,
        reserved_names: Iterable[str] = (),
    ) -> None:
        seen: set[str] = set()
        for c in configs:
            if c.name in seen:
                raise McpError(c.name, f"two MCP servers are named {c.name!r}")
            seen.add(c.name)
        self.host = McpHost()
        self.namer = ToolNamer(reserved_names)
        self.servers: dict[str, McpServer] = {
            c.name: McpServer(c, (base_dirs or {}).get(c.name, base_dir), host=self.host, namer=self.namer)
            for c in configs
        }
        self.errors: dict[str, str] = {}  # server name -> why it could not be listed / started
        # Assign names for cached listings now, in config order, so bare-name precedence
        # does not depend on which server happens to start first.
        for s in self.servers.values():
            s.tools()

    def _needs_start(self, server: McpServer) -> bool:
        return server.config.start == "eager" or server.listing is None

    async def prepare(self, *, strict: bool = False) -> None:
        """List uncached servers and start eager ones, concurrently.

        A server that fails is recorded in ``errors`` and logged (its group stays
        loadable and retries later); with ``strict`` the first failure is raised.
        """
        todo = [s for s in self.servers.values() if self._needs_start(s)]
        if todo:
            await self.host.call(self._prepare_in_host, todo)
        self._after_prepare(strict)

    def prepare_blocking(self, *, strict: bool = False) -> None:
        """``prepare()`` for synchronous callers such as ``build_runtime``."""
        todo = [s for s in self.servers.values() if self._needs_start(s)]
        if todo:
            self.host.call_blocking(self._prepare_in_host, todo)
        self._after_prepare(strict)

    async def _prepare_in_host(self, servers: list[McpServer]) -> None:
        async def one(s: McpServer) -> None:
            try:
                await s._ensure_connected()
                self.errors.pop(s.name, None)
            except McpStartError as exc:
                self.errors[s.name] = str(exc)

        async with anyio.create_task_group() as tg:
            for s in servers:
                tg.start_soon(one, s)

    def _after_prepare(self, strict: bool) -> None:
        for s in self.servers.values():  # names in config order: see __init__
            s.tools()
        for name, err in self.errors.items():
            log.warning("%s", err)
            if strict:
                raise McpStartError(name, err)

    def groups(self) -> list[ToolGroup]:
        """One group per deferred server (``defer = true``), from what is listed now."""
        return [self._group(s) for s in self.servers.values() if s.config.defer]

    def tools(self) -> list[Tool]:
        """The tools of servers with ``defer = false``, as normal tools (start on first call)."""
        return [t for s in self.servers.values() if not s.config.defer for t in s.tools()]

    def instructions(self) -> dict[str, str]:
        """Server instructions by server name (for servers whose tools are not in a group)."""
        return {s.name: s.instructions for s in self.servers.values() if s.instructions}

    def _group(self, server: McpServer) -> ToolGroup:
        description = (
            server.config.description or _first_line(server.instructions) or f"Tools of the MCP server {server.name}"
        )

        async def load() -> list[Tool]:
            await server.start()
            return list(server.tools())

        return ToolGroup(
            id=server.group_id,
            name=server.name,
            description=description,
            loader=load,
            known=server.descriptors(),
            instructions=server.instructions,
            defer=server.config.defer,
        )

    async def aclose(self) -> None:
        """Close every session (no server process is left) and stop the host thread."""
        with anyio.CancelScope(shield=True):
            if self.host.running:
                await self.host.call(self._close_in_host)
            await self.host.astop()

    def close(self) -> None:
        if self.host.running:
            self.host.call_blocking(self._close_in_host)
        self.host.stop()

    async def _close_in_host(self) -> None:
        async with anyio.create_task_group() as tg:
            for s in self.servers.values():
                tg.start_soon(s._disconnect)

    async def __aenter__(self) -> McpToolset:
        await self.prepare()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


async def open_mcp_tools(
    configs: Sequence[McpServerConfig],
    base_dir: str | Path = ".",
    *,
    reserved_names: Iterable[str] = (),
    strict: bool = False,
) -> tuple[list[ToolGroup], list[Tool], Callable[[], Awaitable[None]]]:
    """Prepare the servers and return (groups of deferred servers, eager tools, closer)."""
    toolset = McpToolset(configs, base_dir, reserved_names=reserved_names)
    try:
        await toolset.prepare(strict=strict)
    except BaseException:
        await toolset.aclose()
        raise
    return toolset.groups(), toolset.tools(), toolset.aclose


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
    "describe_target",
    "open_mcp_tools",
    "read_cached_listing",
    "to_tool_result",
]
