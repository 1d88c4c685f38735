"""The SDK's ``OAuthClientProvider`` as greenroom uses it for an upstream HTTP server:
tokens from ``FileTokenStorage``, their expiry and the authorization server's metadata
restored after a restart (the SDK forgets both when it loads stored tokens, so an expired
token would meet a 401 and a full login instead of a refresh), and, in the runtime, a
login it cannot do itself turned into ``LoginRequired`` naming the server.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Awaitable, Callable

import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthMetadata,
    ProtectedResourceMetadata,
)
from pydantic import ValidationError

from greenroom.config.model import McpOAuthConfig, McpServerConfig
from greenroom.mcp.oauth.store import FileTokenStorage, token_path

log = logging.getLogger(__name__)

GRANTS = ["authorization_code", "refresh_token"]
RedirectHandler = Callable[[str], Awaitable[None]]
CallbackHandler = Callable[[], Awaitable[AuthorizationCodeResult]]


class LoginRequired(Exception):
    """The server needs a login that only ``greenroom mcp login`` can do (the message says
    which server and why)."""


class OAuthConfigError(ValueError):
    """The server's ``oauth`` settings cannot work (the message names the server and key)."""


class StoredTokensProvider(OAuthClientProvider):
    """``OAuthClientProvider`` that also restores what a refresh needs from the store."""

    def __init__(self, storage: FileTokenStorage, **kwargs: object) -> None:
        super().__init__(storage=storage, **kwargs)  # type: ignore[arg-type]
        self.store = storage
        storage.context = self.context

    def _settle_client_auth(self) -> None:
        """A configured confidential client authenticates at the token endpoint as the
        authorization server's metadata allows (``token_auth_method``)."""
        ctx, client = self.context, self.store.client
        if client is None or not client.client_secret or ctx.client_info is None:
            return
        if ctx.client_info.client_id != client.client_id:
            return
        supported = ctx.oauth_metadata.token_endpoint_auth_methods_supported if ctx.oauth_metadata else None
        method = token_auth_method(supported)
        if ctx.client_info.token_endpoint_auth_method != method:
            ctx.client_info = ctx.client_info.model_copy(update={"token_endpoint_auth_method": method})

    async def _perform_authorization(self) -> httpx2.Request:
        self._settle_client_auth()
        return await super()._perform_authorization()

    async def _refresh_token(self) -> httpx2.Request:
        self._settle_client_auth()
        return await super()._refresh_token()

    async def _initialize(self) -> None:
        await super()._initialize()
        ctx, record = self.context, self.store.record
        if ctx.current_tokens is None:
            return
        expires = self.store.expires_at
        ctx.token_expiry_time = None if expires is None else max(expires, 1.0)  # the SDK reads 0 as "never"
        try:
            if record.get("as_metadata") and ctx.oauth_metadata is None:
                ctx.oauth_metadata = OAuthMetadata.model_validate(record["as_metadata"])
            if record.get("resource_metadata") and ctx.protected_resource_metadata is None:
                ctx.protected_resource_metadata = ProtectedResourceMetadata.model_validate(record["resource_metadata"])
        except ValidationError as exc:  # a damaged record: discovery finds them again on a 401
            log.warning("MCP server %r: stored OAuth metadata ignored: %s", self.store.name, exc.errors()[:1])
        if record.get("auth_server_url") and ctx.auth_server_url is None:
            ctx.auth_server_url = str(record["auth_server_url"])


def token_auth_method(supported: list[str] | None) -> str:
    """How a client with a secret authenticates at the token endpoint: HTTP Basic, which
    every authorization server must support (RFC 6749 2.3.1; RFC 8414 makes it the default
    when the metadata names none), unless the server's metadata leaves it out and names
    ``client_secret_post``."""
    if supported and "client_secret_basic" not in supported and "client_secret_post" in supported:
        return "client_secret_post"
    return "client_secret_basic"


def redirect_uri(port: int) -> str:
    return f"http://127.0.0.1:{port}/callback"


def client_secret(config: McpServerConfig, oauth: McpOAuthConfig) -> str | None:
    """The pre-registered client's secret, from the environment variable the config names."""
    if not oauth.client_secret_env:
        return None
    secret = os.environ.get(oauth.client_secret_env)
    if not secret:
        raise OAuthConfigError(
            f"MCP server {config.name!r}: oauth.client_secret_env names {oauth.client_secret_env!r}, "
            "which is not set in the environment"
        )
    return secret


def configured_client(
    config: McpServerConfig, oauth: McpOAuthConfig, redirect: str
) -> OAuthClientInformationFull | None:
    """The pre-registered client of ``oauth.client_id`` (None: register or use a metadata URL)."""
    if not oauth.client_id:
        if oauth.client_secret_env:
            raise OAuthConfigError(f"MCP server {config.name!r}: oauth.client_secret_env needs oauth.client_id")
        return None
    secret = client_secret(config, oauth)
    return OAuthClientInformationFull(
        client_id=oauth.client_id,
        client_secret=secret,
        redirect_uris=[redirect],  # type: ignore[list-item]
        grant_types=GRANTS,
        token_endpoint_auth_method=token_auth_method(None) if secret else "none",  # settled with the metadata
    )


def make_provider(
    config: McpServerConfig,
    *,
    fresh: bool = False,
    port: int | None = None,
    on_redirect: RedirectHandler | None = None,
    on_callback: CallbackHandler | None = None,
) -> StoredTokensProvider:
    """The provider for ``config`` (an HTTP server): with handlers, one that can log in."""
    if not config.url:
        raise OAuthConfigError(f"MCP server {config.name!r}: OAuth needs a streamable-HTTP server (url)")
    oauth = config.oauth or McpOAuthConfig()
    redirect = redirect_uri(oauth.redirect_port if port is None else port)
    client = configured_client(config, oauth, redirect)
    storage = FileTokenStorage(config.name, config.url, fresh=fresh, client=client)
    metadata = OAuthClientMetadata(
        client_name="greenroom",
        redirect_uris=[redirect],  # type: ignore[list-item]
        grant_types=GRANTS,  # type: ignore[arg-type]
        response_types=["code"],
        token_endpoint_auth_method=client.token_endpoint_auth_method if client else "none",  # type: ignore[arg-type]
        scope=" ".join(oauth.scopes) or None,
    )

    async def refuse_login(_url: str) -> None:
        had = bool((storage.record.get("tokens") or {}).get("refresh_token"))
        why = "the authorization server refused to refresh its tokens" if had else "it has no valid tokens"
        raise LoginRequired(
            f"MCP server {config.name!r} needs a login: {why}; run `greenroom mcp login CONFIG {config.name}`"
        )

    async def no_callback() -> AuthorizationCodeResult:  # never reached: refuse_login raised
        raise LoginRequired(f"MCP server {config.name!r} needs a login")

    try:
        return StoredTokensProvider(
            storage,
            server_url=config.url,
            client_metadata=metadata,
            redirect_handler=on_redirect or refuse_login,
            callback_handler=on_callback or no_callback,
            client_metadata_url=oauth.client_metadata_url,
        )
    except ValueError as exc:
        raise OAuthConfigError(f"MCP server {config.name!r}: oauth.client_metadata_url: {exc}") from None


def auth_for(config: McpServerConfig) -> httpx2.Auth | None:
    """What the runtime authenticates an HTTP server's requests with: the OAuth provider
    when the server is configured for OAuth or has stored tokens, else None (its
    ``headers`` alone). Raises ``LoginRequired`` for an OAuth server nobody logged in to:
    the runtime never registers a client nor opens a browser."""
    if not config.url:
        return None
    stored = token_path(config.name, config.url).exists()
    if config.oauth is None and not stored:
        return None
    provider = make_provider(config)
    if not provider.store.record.get("tokens"):
        if config.oauth is None:
            return None  # a file for another URL of this name
        raise LoginRequired(
            f"MCP server {config.name!r} needs a login (OAuth): run `greenroom mcp login CONFIG {config.name}`"
        )
    return provider


__all__ = [
    "LoginRequired",
    "OAuthConfigError",
    "StoredTokensProvider",
    "auth_for",
    "client_secret",
    "make_provider",
    "redirect_uri",
    "token_auth_method",
]
