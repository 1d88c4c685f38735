"""Logging in to an upstream server: the authorization-code flow with PKCE, its redirect
received on a loopback listener (``127.0.0.1``), pasted on stdin (headless), or, unattended,
taken from the authorization server's own answer when it approves without a person; then
the server listed through the same client (``greenroom mcp login`` and ``probe``)."""

from __future__ import annotations

import sys
import urllib.parse
from collections.abc import Awaitable, Callable
from typing import Any, TextIO

import anyio
import attrs
from anyio.abc import SocketStream, TaskGroup
from mcp.client.auth import OAuthFlowError
from mcp.shared.auth import AuthorizationCodeResult

from greenroom._support.redact import public_url
from greenroom.config.model import McpOAuthConfig, McpServerConfig
from greenroom.mcp.connection import CLIENT_INFO, list_server
from greenroom.mcp.listing import McpListing
from greenroom.mcp.oauth.provider import make_provider, redirect_uri
from greenroom.mcp.sdk import ClientSession, httpx2, streamable_http_client

Say = Callable[[str], None]
Then = Callable[[Any], Awaitable[None]]
_MAX_REQUEST = 16_384
_MAX_HOPS = 10
_REDIRECTS = (301, 302, 303, 307, 308)
_PAGE = b"<!doctype html><title>greenroom</title><p>Signed in. You can close this window.</p>"


@attrs.define
class Callback:
    """The redirect's query, once it arrived (or was pasted)."""

    got: anyio.Event = attrs.field(factory=anyio.Event)
    result: AuthorizationCodeResult | None = None
    error: str | None = None
    state: str | None = None  # the one the authorization URL carried

    def take(self, query: str) -> None:
        params = dict(urllib.parse.parse_qsl(query))
        if "error" in params:
            self.error = f"{params['error']}: {params.get('error_description', '')}".rstrip(": ")
        elif "code" in params:
            state = params.get("state", self.state)
            self.result = AuthorizationCodeResult(code=params["code"], state=state, iss=params.get("iss"))
        else:
            self.error = "the redirect carried neither a code nor an error"
        self.got.set()

    def answer(self) -> AuthorizationCodeResult:
        if self.result is None:
            raise OAuthFlowError(f"the authorization server refused the login ({self.error})")
        return self.result


async def _serve_one(stream: SocketStream, callback: Callback) -> None:
    async with stream:
        data = b""
        with anyio.move_on_after(10):
            while b"\r\n\r\n" not in data and len(data) < _MAX_REQUEST:
                data += await stream.receive()
        line = data.split(b"\r\n", 1)[0].decode("latin-1")
        parts = line.split(" ")
        target = urllib.parse.urlsplit(parts[1]) if len(parts) == 3 and parts[0] == "GET" else None
        if target is None or target.path != "/callback" or callback.got.is_set():
            await stream.send(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
            return
        callback.take(target.query)
        head = (
            f"HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {len(_PAGE)}\r\nConnection: close\r\n\r\n"
        )
        await stream.send(head.encode() + _PAGE)


async def listen(tg: TaskGroup, port: int, callback: Callback) -> int:
    """Serve the redirect on ``127.0.0.1:port`` (0: a free port) in ``tg``; the port."""
    try:
        listener = await anyio.create_tcp_listener(local_host="127.0.0.1", local_port=port)
    except OSError as exc:
        raise OAuthFlowError(f"cannot listen for the redirect on 127.0.0.1:{port}: {exc.strerror or exc}") from None

    async def serve() -> None:
        async with listener:
            await listener.serve(lambda s: _serve_one(s, callback))

    tg.start_soon(serve)
    return int(listener.extra(anyio.abc.SocketAttribute.local_port))


async def read_pasted(callback: Callback, source: TextIO) -> None:
    """The redirected URL (or its code) from ``source``, for a login without a browser here."""
    line = (await anyio.to_thread.run_sync(source.readline, abandon_on_cancel=True)).strip()
    if not line:
        callback.error = "no redirected URL or code was given"
        callback.got.set()
    elif "?" in line or "=" in line:
        callback.take(urllib.parse.urlsplit(line).query if "?" in line else line)
    else:
        callback.take(urllib.parse.urlencode({"code": line}))


async def approve_unattended(url: str, redirect: str, callback: Callback) -> None:
    """What a browser does at an authorization server that approves without a person (a
    test or CI identity provider): follow its redirects until one goes to ``redirect``,
    and take that one's query as the answer. Anything else (a sign-in page) is an error
    that says a person is wanted."""
    target = urllib.parse.urlsplit(redirect)[:3]
    async with httpx2.AsyncClient(follow_redirects=False, timeout=httpx2.Timeout(30.0)) as http:
        for _ in range(_MAX_HOPS):
            response = await http.get(url)
            location = response.headers.get("location")
            if response.status_code not in _REDIRECTS or not location:
                raise OAuthFlowError(
                    f"the authorization server did not approve unattended (HTTP {response.status_code} from "
                    f"{public_url(url)}): it wants a person to sign in; log in without --unattended"
                )
            url = urllib.parse.urljoin(url, location)
            if urllib.parse.urlsplit(url)[:3] == target:
                callback.take(urllib.parse.urlsplit(url).query)
                return
    raise OAuthFlowError(f"the authorization server redirected more than {_MAX_HOPS} times without approving")


async def login(
    config: McpServerConfig,
    *,
    say: Say,
    headless: bool = False,
    unattended: bool = False,
    open_browser: bool = True,
    source: TextIO | None = None,
    wait: float = 300.0,
) -> tuple[McpListing, bool]:
    """Log in to ``config``'s server (fresh tokens) and list it; whether it asked for OAuth."""
    return await connect(
        config,
        say=say,
        fresh=True,
        headless=headless,
        unattended=unattended,
        open_browser=open_browser,
        source=source,
        wait=wait,
    )


async def connect(
    config: McpServerConfig,
    *,
    say: Say,
    fresh: bool = False,
    headless: bool = False,
    unattended: bool = False,
    open_browser: bool = True,
    source: TextIO | None = None,
    wait: float = 300.0,
    then: Then | None = None,
) -> tuple[McpListing, bool]:
    """List ``config``'s server through the OAuth client, logging in when it asks; then
    ``then(session)``, if given, on the same connection (a login for a call's scopes
    happens there too). ``unattended``: no person signs in (``approve_unattended``)."""
    oauth = config.oauth or McpOAuthConfig()
    callback = Callback()
    async with anyio.create_task_group() as tg:
        listener = not (headless or unattended)
        port = await listen(tg, oauth.redirect_port, callback) if listener else oauth.redirect_port

        async def on_redirect(url: str) -> None:
            callback.state = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(url).query)).get("state")
            if unattended:
                say(f"Signing in for MCP server {config.name!r} unattended at {public_url(url)}")
                await approve_unattended(url, redirect_uri(port), callback)
                return
            if headless:
                say(f"Open this URL in a browser and sign in:\n\n{url}\n")
                say("Then paste the URL you were sent to (or its code) here:")
                tg.start_soon(read_pasted, callback, source or sys.stdin)
                return
            say(f"Sign in for MCP server {config.name!r} in your browser:\n\n{url}\n")
            if open_browser:
                import webbrowser

                webbrowser.open(url)

        async def on_callback() -> AuthorizationCodeResult:
            with anyio.fail_after(wait):
                try:
                    await callback.got.wait()
                except TimeoutError:
                    raise OAuthFlowError(f"no answer from the browser within {wait:g} s") from None
            return callback.answer()

        provider = make_provider(config, fresh=fresh, port=port, on_redirect=on_redirect, on_callback=on_callback)
        timeout = httpx2.Timeout(config.connect_timeout, read=max(300.0, config.timeout))
        async with httpx2.AsyncClient(auth=provider, headers=dict(config.headers), timeout=timeout) as http:
            async with streamable_http_client(config.url or "", http_client=http) as (read, write):
                async with ClientSession(read, write, client_info=CLIENT_INFO) as session:
                    listing = await list_server(session, await session.initialize())
                    if then is not None:
                        await then(session)
        tg.cancel_scope.cancel()
    return listing, bool(provider.store.record.get("tokens"))


__all__ = ["Callback", "approve_unattended", "connect", "listen", "login", "read_pasted"]
