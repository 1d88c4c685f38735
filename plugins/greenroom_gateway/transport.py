"""How the gateway is reached: stdio (one client), or streamable HTTP (any number).

Over HTTP the gateway binds where it is told (loopback by default); with a token every
request must carry ``Authorization: Bearer <token>``, else it is answered 401 before
the MCP layer sees it. With OAuth (``oauth.tokens``) every request must carry an
access token of the issuer for this gateway, checked by the SDK's bearer middleware, and
the Protected Resource Metadata is served beside the endpoint. In front of all that, the
probes (``/healthz``, ``/readyz``) and the body limit (``ops.http``). Streams resume with
``Last-Event-ID`` from a bounded event store (``resume``).
Either way the gateway ends cleanly: over HTTP it drains first (``ops.shutdown``), then
every client's run ends (what the plugins learned is kept) and the upstream servers stop.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import logging
import sys
from collections.abc import Callable, Iterator
from typing import Any

import anyio
from anyio.abc import TaskStatus

from greenroom_gateway.config import ServeOAuthConfig
from greenroom_gateway.gateway import Gateway
from greenroom_gateway.ops.health import ReadinessProbe
from greenroom_gateway.ops.http import MAX_BODY_BYTES, ASGIApp, Front, Receive, Scope, Send
from greenroom_gateway.ops.shutdown import DRAIN_SECONDS, stop_on_signal
from greenroom_gateway.resume import RETRY_MS, event_store, owning

log = logging.getLogger("greenroom.serve")

CLOSE_SECONDS = 5
"""Once the streams are closed, how long uvicorn waits for connections to end before it
cuts them (a backstop: a closed stream ends at once)."""


async def serve_stdio(gateway: Gateway) -> None:
    """Serve one client on stdin and stdout until it closes them."""
    from mcp.server.stdio import stdio_server

    async with gateway.serving():
        server = gateway.server
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


class BearerAuth:
    """An ASGI layer that lets through only requests bearing the token."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self._expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") == "http" and not self._allowed(scope):
            body = json.dumps({"error": "unauthorized: send Authorization: Bearer <token>"}).encode()
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"www-authenticate", b'Bearer realm="greenroom"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": body})
            return
        await self.app(scope, receive, send)

    def _allowed(self, scope: Scope) -> bool:
        for key, value in scope.get("headers", ()):
            if key.lower() == b"authorization":
                return hmac.compare_digest(bytes(value), self._expected)
        return False


async def serve_http(
    gateway: Gateway,
    *,
    host: str = "127.0.0.1",
    port: int = 8765,
    path: str = "/mcp",
    token: str | None = None,
    oauth: ServeOAuthConfig | None = None,
    announce: Callable[[str], None] | None = None,
    drain_timeout: float = DRAIN_SECONDS,
    max_body_bytes: int = MAX_BODY_BYTES,
    json_logs: bool = False,
) -> None:
    """Serve any number of clients over streamable HTTP until SIGTERM or SIGINT, then
    drain: the calls in progress get ``drain_timeout`` seconds to finish."""
    import uvicorn

    if token is not None and oauth is not None:
        raise ValueError("a static token and OAuth exclude each other")
    if drain_timeout < 0:
        raise ValueError("the drain timeout must be 0 or more seconds")
    async with gateway.serving():
        sdk: dict[str, Any] = {"streamable_http_path": path, "host": host, "max_request_body_size": max_body_bytes}
        sdk.update(event_store=event_store(), retry_interval=RETRY_MS)  # streams resume with Last-Event-ID
        if oauth is not None:
            from greenroom_gateway.oauth.settings import auth_settings
            from greenroom_gateway.oauth.tokens import JwtVerifier

            sdk.update(auth=auth_settings(oauth), token_verifier=JwtVerifier(oauth))
        app: ASGIApp = owning(gateway.server.streamable_http_app(**sdk))  # whose session each event is
        if token is not None:
            app = BearerAuth(app, token)
        front = Front(app, ReadinessProbe(gateway.runtime), max_body_bytes=max_body_bytes)
        logs: dict[str, Any] = {"log_config": None, "access_log": False} if json_logs else {}
        config = uvicorn.Config(
            front,
            host=host,
            port=port,
            log_level="warning",
            lifespan="on",
            timeout_graceful_shutdown=CLOSE_SECONDS,
            **logs,
        )
        server = _server(config)
        async with anyio.create_task_group() as tg:
            tg.start_soon(stop_on_signal, server, front, gateway.calls, drain_timeout)
            await tg.start(_serve, server)
            # uvicorn says nothing when it is ready; polled so the address can be announced
            while not server.started:
                if server.should_exit:
                    break
                await anyio.sleep(0.02)
            if server.started:
                bound = server.servers[0].sockets[0].getsockname()[1] if server.servers else port
                where = f"[{host}]" if ":" in host else host
                said = f"greenroom serve: listening on http://{where}:{bound}{path}"
                (announce or (log.info if json_logs else _to_stderr))(said)
            await server.finished.wait()
            tg.cancel_scope.cancel()


def _server(config: Any) -> Any:
    """uvicorn's server, without its own signal handling: uvicorn raises the signal again
    once it stopped, which would end the process before the clients' runs end."""
    import uvicorn  # loaded only when serving over HTTP

    class Server(uvicorn.Server):
        def __init__(self, config: uvicorn.Config) -> None:
            super().__init__(config)
            self.finished = anyio.Event()

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            yield

    return Server(config)


async def _serve(server: Any, *, task_status: TaskStatus[None] = anyio.TASK_STATUS_IGNORED) -> None:
    task_status.started()
    try:
        await server.serve()
    finally:
        server.finished.set()


def _to_stderr(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


__all__ = ["BearerAuth", "serve_http", "serve_stdio"]
