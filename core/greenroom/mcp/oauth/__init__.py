"""OAuth 2.1 as a client of upstream MCP servers: tokens kept per server (``store``), the
SDK's provider that restores and refreshes them (``provider``), and the login flows
(``login``). Needs the ``mcp`` extra."""

import greenroom.mcp.sdk  # noqa: F401  (first: without the extra, its ImportError says what to install)
from greenroom.mcp.oauth.provider import LoginRequired, OAuthConfigError, auth_for, make_provider
from greenroom.mcp.oauth.store import FileTokenStorage, TokenFileError, token_path

__all__ = [
    "FileTokenStorage",
    "LoginRequired",
    "OAuthConfigError",
    "TokenFileError",
    "auth_for",
    "make_provider",
    "token_path",
]
