"""The gateway's HTTP front, outside everything else (tokens, OAuth, the MCP transport):
the probes, the request body limit, and a stop that drains.

- ``GET /healthz``: 200 ``{"status": "alive"}`` while the process serves; it touches no
  upstream server and no store. ``GET /readyz``: 200 when every check passes
  (``ops.health``), else 503 naming each thing not ready; 503 at once
  once the gateway is stopping. Neither asks for a token: a probe has none.
- A request body over the limit is answered 413 with a JSON-RPC error naming the limit,
  and never held: past the limit its bytes are read and dropped (a client that writes its
  whole body before it reads the answer would otherwise see the connection cut instead of
  the 413), up to ``DISCARD_BYTES``; a larger one, or one whose client waits for ``100
  Continue``, is answered at once and its connection closed.
- Stopping (``stopping = True``): every new request is answered 503 with a JSON-RPC
  error; the requests in progress go on, and ``wait_idle`` waits for them. Event streams
  (a GET stream, a ``subscriptions/listen``) never end on their own, so they are not
  waited for; ``close_streams`` ends them (and whatever is still open) the way a client
  that leaves ends them, then finishes each response so the client sees a clean end.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio

from greenroom_gateway.ops.health import ReadinessProbe, as_json

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

HEALTH_PATH = "/healthz"
READY_PATH = "/readyz"
MAX_BODY_BYTES = 4 * 1024 * 1024
"""The largest request body taken unless told otherwise: the MCP SDK's own default."""
DISCARD_BYTES = 16 * 1024 * 1024
"""Bytes of a refused body read (and dropped) so that its client reads the 413."""

INVALID_REQUEST = -32600
SERVER_BUSY = -32000
_DISCONNECT: Message = {"type": "http.disconnect"}


class Front:
    """The ASGI layer in front of the gateway's app (see the module's docstring)."""

    def __init__(self, app: ASGIApp, readiness: ReadinessProbe, *, max_body_bytes: int = MAX_BODY_BYTES) -> None:
        if max_body_bytes < 1:
            raise ValueError("the largest request body must be at least 1 byte")
        self.app = app
        self.readiness = readiness
        self.max_body_bytes = max_body_bytes
        self.stopping = False
        self._closed = False
        self._busy = 0  # requests in progress that end on their own (not event streams)
        self._idle: anyio.Event | None = None
        self._receiving: set[anyio.CancelScope] = set()

    @property
    def busy(self) -> int:
        """Requests in progress, event streams left out."""
        return self._busy

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await self.app(scope, receive, send)  # the lifespan
            return
        path, method = scope.get("path", ""), str(scope.get("method", "GET")).upper()
        if path in (HEALTH_PATH, READY_PATH):
            await self._probe(path, method, send)
            return
        if self.stopping and method != "DELETE":  # a client ending its session may
            await _json(send, 503, _rpc_error(SERVER_BUSY, STOPPING), [(b"connection", b"close")])
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_body_bytes:
            if declared <= DISCARD_BYTES and _header(scope, b"expect") != "100-continue":
                await _discard(receive, DISCARD_BYTES)
            await self._too_large(send, f"Content-Length is {declared} bytes")
            return
        if declared is None and method in ("POST", "PUT", "PATCH"):
            bounded = await self._read_bounded(receive)
            if bounded is None:
                await _discard(receive, DISCARD_BYTES)
                await self._too_large(send, f"more than {self.max_body_bytes} bytes were sent")
                return
            receive = bounded
        stream = method == "GET" or _header(scope, b"mcp-method") == "subscriptions/listen"
        state = _Response(send)
        if not stream:
            self._busy += 1
        try:
            await self.app(scope, self._closable(receive), state.send)
        finally:
            if not stream:
                self._busy -= 1
                if self._busy == 0 and self._idle is not None:
                    self._idle.set()
            if self._closed:
                await state.finish()

    # -- stopping ------------------------------------------------------------------------
    async def wait_idle(self, timeout: float, hurry: anyio.Event | None = None) -> bool:
        """Wait until no request is in progress (event streams aside), at most ``timeout``
        seconds or until ``hurry`` is set; whether none is."""
        with anyio.move_on_after(timeout) as bound:
            async with anyio.create_task_group() as tg:
                if hurry is not None:

                    async def hurried() -> None:
                        await hurry.wait()
                        bound.cancel()

                    tg.start_soon(hurried)
                while self._busy:
                    self._idle = anyio.Event()
                    await self._idle.wait()
                tg.cancel_scope.cancel()
        return self._busy == 0

    def close_streams(self) -> None:
        """End every request still open as if its client had left (event streams first of
        all); each response is finished cleanly once its handler returns."""
        self._closed = True
        for scope in list(self._receiving):
            scope.cancel()

    def _closable(self, receive: Receive) -> Receive:
        async def closable() -> Message:
            if self._closed:
                return _DISCONNECT
            with anyio.CancelScope() as scope:
                self._receiving.add(scope)
                try:
                    return await receive()
                finally:
                    self._receiving.discard(scope)
            return _DISCONNECT  # close_streams: the app hears its client leave

        return closable

    # -- answers -------------------------------------------------------------------------
    async def _probe(self, path: str, method: str, send: Send) -> None:
        if method not in ("GET", "HEAD"):
            await _json(send, 405, {"error": f"{path} answers GET"}, [(b"allow", b"GET, HEAD")])
            return
        head = method == "HEAD"
        if path == HEALTH_PATH:
            await _json(send, 200, {"status": "alive"}, head=head)
            return
        if self.stopping:
            await _json(send, 503, {"status": "stopping", "checks": []}, head=head)
            return
        checks = await self.readiness.checks()
        if self.stopping:  # it began while the checks ran
            await _json(send, 503, {"status": "stopping", "checks": []}, head=head)
            return
        ready = all(c.ready for c in checks)
        body: dict[str, Any] = {"status": "ready" if ready else "not ready"}
        if not ready:
            body["not_ready"] = [c.name for c in checks if not c.ready]
        body["checks"] = [as_json(c) for c in checks]
        await _json(send, 200 if ready else 503, body, head=head)

    async def _too_large(self, send: Send, sent: str) -> None:
        n = self.max_body_bytes
        message = f"request body too large: {sent}; the gateway takes at most {n} bytes (--max-body-bytes {n})"
        await _json(send, 413, _rpc_error(INVALID_REQUEST, message), [(b"connection", b"close")])

    async def _read_bounded(self, receive: Receive) -> Receive | None:
        """Read a body of unknown length, holding at most the limit: a ``receive`` that
        gives it again, or None once it is over the limit."""
        chunks: list[bytes] = []
        size = 0
        after: Message | None = None
        while True:
            message = await receive()
            if message.get("type") != "http.request":
                after = message
                break
            body = bytes(message.get("body", b""))
            size += len(body)
            if size > self.max_body_bytes:
                return None
            chunks.append(body)
            if not message.get("more_body", False):
                break
        pending: list[Message] = [{"type": "http.request", "body": b"".join(chunks), "more_body": False}]
        if after is not None:
            pending.append(after)

        async def replay() -> Message:
            return pending.pop(0) if pending else await receive()

        return replay


STOPPING = "the gateway is stopping and takes no new requests; send it to another replica, or retry shortly"


class _Response:
    """Passes a response on, and finishes one left open (a stream its client was told had
    ended) so the client reads a clean end instead of a cut connection."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self.started = False
        self.done = False

    async def send(self, message: Message) -> None:
        kind = message.get("type")
        if kind == "http.response.start":
            self.started = True
        elif kind == "http.response.body" and not message.get("more_body", False):
            self.done = True
        await self._send(message)

    async def finish(self) -> None:
        if self.started and not self.done:
            self.done = True
            try:
                await self._send({"type": "http.response.body", "body": b"", "more_body": False})
            except Exception:  # the client went away meanwhile: nothing left to finish
                pass


async def _discard(receive: Receive, most: int) -> None:
    """Read what is left of a request body, up to ``most`` bytes, keeping none of it."""
    read = 0
    while read <= most:
        message = await receive()
        if message.get("type") != "http.request":
            return
        read += len(message.get("body", b""))
        if not message.get("more_body", False):
            return


def _rpc_error(code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": None, "error": {"code": code, "message": message}}


async def _json(
    send: Send, status: int, body: Any, headers: list[tuple[bytes, bytes]] | None = None, *, head: bool = False
) -> None:
    data = json.dumps(body).encode()
    start_headers = [
        (b"content-type", b"application/json"),
        (b"content-length", str(len(data)).encode()),
        (b"cache-control", b"no-store"),
        *(headers or []),
    ]
    await send({"type": "http.response.start", "status": status, "headers": start_headers})
    await send({"type": "http.response.body", "body": b"" if head else data})


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if bytes(key).lower() == name:
            return bytes(value).decode("latin-1").strip()
    return None


def _content_length(scope: Scope) -> int | None:
    value = _header(scope, b"content-length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


__all__ = ["HEALTH_PATH", "MAX_BODY_BYTES", "READY_PATH", "STOPPING", "ASGIApp", "Front", "Receive", "Scope", "Send"]
