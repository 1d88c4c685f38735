"""An MCP request as the gateway reads it: its revision, its client's name, its connection,
how progress and an upstream server's questions (``elicitation/create``: ``Asking``) reach
its client, and how it is observed (``greenroom_serve_request``'s
answers entered around it) and logged: a line per request, once it is answered, with its
``method``, ``tool``, ``caller`` (who it counts against), ``duration_ms`` and ``outcome``
(``ok``, ``error`` for an error result, ``refused`` at a limit, ``failed`` for an error
response, ``cancelled``), for the JSON log (``ops.logs``).

One member of the SDK read here has no public door (mcp 2.3): a 2025-11-25 client holds a
connection, and its run lasts as long as the connection, so the gateway keeps the run in
the connection's ``state`` and ends it from the connection's ``exit_stack``, which the SDK
unwinds when the connection closes. The lowlevel server hands a handler a
``ServerRequestContext``, whose session reaches its connection only through the private
``_connection`` (``connection_of``). Everything else has public doors:
``ServerRequestContext.protocol_version``, ``ServerSession.client_params``, and, for the
caller, ``get_access_token`` (``oauth.views``). pyproject.toml bounds ``mcp`` below its
next minor release, and tests/plugins/gateway/test_sdk_private.py fails when it moves.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from greenroom import Runtime
from greenroom.kit import McpRequest, call_asker, observed
from greenroom_gateway.clients import Progress

if TYPE_CHECKING:
    from mcp.server.connection import Connection
    from mcp.server.context import ServerRequestContext

HOOK = "greenroom_serve_request"
requests_log = logging.getLogger("greenroom.serve.requests")


def connection_of(ctx: ServerRequestContext[Any, Any]) -> Connection:
    """The connection a request came on: its ``state`` and ``exit_stack`` are the gateway's."""
    return ctx.session._connection


def sessionless(ctx: ServerRequestContext[Any, Any]) -> bool:
    """Whether a request speaks a revision without sessions (2026-07-28 and later)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def client_name_of(ctx: ServerRequestContext[Any, Any]) -> str | None:
    """The name a client gave (``initialize``, or a sessionless request's ``_meta``)."""
    params = ctx.session.client_params
    return params.client_info.name if params is not None else None


class Asking:
    """The client of one ``tools/call`` as an upstream server's ``elicitation/create``
    reaches it (``greenroom.kit.call_asker``): asked on the call's own stream, its answer
    handed back; refused, saying why, when the client cannot answer (it declared no such
    elicitation, or its request has no channel for the server's requests: 2026-07-28); and
    every question still open dropped when the call ends (``close``)."""

    def __init__(self, ctx: ServerRequestContext[Any, Any]) -> None:
        self.ctx = ctx
        self._open: set[anyio.CancelScope] = set()

    def __eq__(self, other: object) -> bool:
        """The calls of one connection ask one client (a question goes on either's stream)."""
        return isinstance(other, Asking) and connection_of(other.ctx) is connection_of(self.ctx)

    def __hash__(self) -> int:
        return id(connection_of(self.ctx))

    def refusal(self, params: Any) -> str | None:
        """Why this client cannot be asked ``params``; None when it can."""
        session, name = self.ctx.session, client_name_of(self.ctx) or "the client"
        can = session.client_capabilities.elicitation if session.client_capabilities is not None else None
        if can is None:
            return f"{name!r}, which made this call, cannot answer elicitation/create: it declared no elicitation"
        if getattr(params, "mode", None) == "url" and can.url is None:
            return f"{name!r}, which made this call, cannot answer a URL elicitation: it declared none"
        if not session.can_send_request:
            return f"{name!r} made this call on a request that carries no channel for the server's own requests"
        return None

    async def __call__(self, params: Any) -> Any:
        import mcp_types
        from mcp.shared.exceptions import MCPError
        from mcp.shared.message import ServerMessageMetadata

        refusal = self.refusal(params)
        if refusal is not None:
            return mcp_types.ErrorData(code=mcp_types.INVALID_REQUEST, message=refusal)
        with anyio.CancelScope() as scope:
            self._open.add(scope)
            try:
                request = mcp_types.ElicitRequest(params=params)
                where = ServerMessageMetadata(related_request_id=self.ctx.request_id)
                return await self.ctx.session.send_request(request, mcp_types.ElicitResult, metadata=where)
            except MCPError as exc:  # the client refused: the server hears why
                return mcp_types.ErrorData(code=exc.code, message=exc.message)
            finally:
                self._open.discard(scope)
        return mcp_types.ErrorData(code=mcp_types.INTERNAL_ERROR, message="the call ended before the client answered")

    def close(self) -> None:
        for scope in list(self._open):
            scope.cancel()


@contextlib.contextmanager
def asking(ctx: ServerRequestContext[Any, Any]) -> Iterator[Asking]:
    """While a client's call runs: what its upstream servers ask reaches that client."""
    asker = Asking(ctx)
    token = call_asker.set(asker)
    try:
        yield asker
    finally:
        call_asker.reset(token)
        asker.close()


def progress_to(ctx: ServerRequestContext[Any, Any]) -> Progress | None:
    """How a call reports progress to the client that made it: notifications with the
    request's progress token; None when the client gave none."""
    from mcp.shared.jsonrpc_dispatcher import progress_token_from_params

    token = progress_token_from_params(ctx.params)
    if token is None:
        return None

    async def report(done: float, total: float | None, message: str | None) -> None:
        await ctx.session.send_progress_notification(
            token,
            done,
            total,
            message,
            related_request_id=ctx.request_id,  # type: ignore[arg-type]
        )

    return report


@contextlib.contextmanager
def observing(
    runtime: Runtime, ctx: ServerRequestContext[Any, Any], method: str, name: str | None = None
) -> Iterator[McpRequest]:
    """The request as ``greenroom_serve_request`` sees it, its answers entered around it,
    and its line in the log once it is answered."""
    http = getattr(ctx, "request", None)  # a Starlette request over HTTP: its headers are lower-case
    headers = {str(k).lower(): str(v) for k, v in getattr(http, "headers", {}).items()}
    request = McpRequest(method, name, meta=dict(ctx.meta or {}), headers=headers)
    with logged(method, name) as line, observed(lambda: runtime.call_hook(HOOK, request=request), request):
        yield request
        if request.error_type is not None:
            line.outcome = "refused" if request.error_type == "limit" else "error"


@attrs.define
class RequestLog:
    """What one request's line will say; filled in as the request is answered."""

    method: str
    tool: str | None = None
    caller: str | None = None
    outcome: str = "ok"
    started: float = attrs.field(factory=time.perf_counter)


_current: ContextVar[RequestLog | None] = ContextVar("greenroom_serve_request_log", default=None)


def note_caller(key: str) -> None:
    """Say who the request being answered is from (its line carries it)."""
    entry = _current.get()
    if entry is not None:
        entry.caller = key


@contextlib.contextmanager
def logged(method: str, tool: str | None = None) -> Iterator[RequestLog]:
    """Around answering one request: its line, once answered, when the log takes it."""
    entry = RequestLog(method, tool)
    token = _current.set(entry)
    try:
        yield entry
    except anyio.get_cancelled_exc_class():
        entry.outcome = "cancelled"
        raise
    except BaseException:
        entry.outcome = "failed"
        raise
    finally:
        _current.reset(token)
        if requests_log.isEnabledFor(logging.INFO):
            _emit(entry)


def _emit(entry: RequestLog) -> None:
    ms = round((time.perf_counter() - entry.started) * 1000, 3)
    what = f"{entry.method} {entry.tool}" if entry.tool else entry.method
    fields: dict[str, Any] = {"method": entry.method, "tool": entry.tool, "caller": entry.caller}
    fields.update(duration_ms=ms, outcome=entry.outcome)
    requests_log.info("%s: %s in %.1f ms", what, entry.outcome, ms, extra=fields)


__all__ = [
    "Asking",
    "RequestLog",
    "asking",
    "client_name_of",
    "connection_of",
    "logged",
    "note_caller",
    "observing",
    "progress_to",
    "sessionless",
]
