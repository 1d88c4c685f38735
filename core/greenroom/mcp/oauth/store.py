"""Where an upstream server's OAuth tokens live: one JSON file per server (its name and
URL) under ``state_dir()/mcp-oauth``, written atomically and readable by its owner only
(0600), holding the issuer that granted them, the client registration, the tokens with
their absolute expiry, and the metadata a refresh needs after a restart.

``FileTokenStorage`` is the SDK's ``TokenStorage``: what the SDK hands it is written at
once. Every token and secret it reads or writes is remembered by ``remember_secrets``, so
no error greenroom prints can show one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time
from pathlib import Path
from typing import Any

from mcp.client.auth.oauth2 import OAuthContext
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken

from greenroom._support.redact import remember_secrets
from greenroom._support.storage import state_dir, write_json_atomic

FOLDER = "mcp-oauth"
_SLUG = re.compile(r"[^A-Za-z0-9_.-]+")


class TokenFileError(Exception):
    """A stored token file that cannot be read (its path and why are in the message)."""


def token_path(name: str, url: str) -> Path:
    """The file of server ``name`` at ``url``: another URL under the same name is another
    server, and never receives this one's tokens."""
    digest = hashlib.sha256(url.encode("utf-8")).hexdigest()[:12]
    slug = _SLUG.sub("_", name).strip("._")[:60] or "server"
    return state_dir() / FOLDER / f"{slug}-{digest}.json"


def _remember(record: dict[str, Any]) -> None:
    tokens = record.get("tokens") or {}
    client = record.get("client_info") or {}
    remember_secrets(
        v for v in (tokens.get("access_token"), tokens.get("refresh_token"), client.get("client_secret")) if v
    )


class FileTokenStorage:
    """The SDK's ``TokenStorage`` for one server, kept in ``token_path(name, url)``.

    ``fresh``: start without the stored tokens (a new login); they are replaced only when
    the new ones arrive. ``client``: a pre-registered client, used instead of a stored
    registration and never written (its secret comes from the environment).
    """

    def __init__(
        self, name: str, url: str, *, fresh: bool = False, client: OAuthClientInformationFull | None = None
    ) -> None:
        self.name = name
        self.url = url
        self.path = token_path(name, url)
        self.client = client
        self.context: OAuthContext | None = None  # set by the provider: its metadata is kept too
        self._record = self.read()
        if fresh:
            self._record.pop("tokens", None)
            self._record.pop("expires_at", None)
        if client is not None:
            remember_secrets([client.client_secret] if client.client_secret else [])

    def read(self) -> dict[str, Any]:
        """The stored record ({} when there is none, or it is for another URL)."""
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (OSError, ValueError) as exc:
            raise TokenFileError(
                f"MCP server {self.name!r}: cannot read its stored OAuth tokens {self.path}: {exc}; "
                f"remove the file (greenroom mcp logout) and log in again"
            ) from None
        if not isinstance(data, dict) or data.get("url") != self.url:
            return {}
        _remember(data)
        return data

    @property
    def record(self) -> dict[str, Any]:
        return self._record

    @property
    def expires_at(self) -> float | None:
        value = self._record.get("expires_at")
        return float(value) if isinstance(value, int | float) else None

    async def get_tokens(self) -> OAuthToken | None:
        raw = self._record.get("tokens")
        return OAuthToken.model_validate(raw) if raw else None

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self._record["tokens"] = tokens.model_dump(mode="json", exclude_none=True)
        self._record["expires_at"] = time.time() + tokens.expires_in if tokens.expires_in is not None else None
        self._save()

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        if self.client is not None:
            return self.client
        raw = self._record.get("client_info")
        return OAuthClientInformationFull.model_validate(raw) if raw else None

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        if self.client is not None and client_info.client_id == self.client.client_id:
            return  # configured, not stored: its secret stays in the environment
        self._record["client_info"] = client_info.model_dump(mode="json", exclude_none=True)
        self._save()

    def _save(self) -> None:
        record = self._record
        record["server"] = self.name
        record["url"] = self.url
        ctx = self.context
        if ctx is not None:
            if ctx.oauth_metadata is not None:
                record["issuer"] = str(ctx.oauth_metadata.issuer)
                record["as_metadata"] = ctx.oauth_metadata.model_dump(mode="json", exclude_none=True)
            if ctx.protected_resource_metadata is not None:
                prm = ctx.protected_resource_metadata.model_dump(mode="json", exclude_none=True)
                record["resource_metadata"] = prm
            if ctx.auth_server_url:
                record["auth_server_url"] = ctx.auth_server_url
        record["saved_at"] = time.time()
        _remember(record)
        write_json_atomic(self.path, record)
        os.chmod(self.path, 0o600)  # mkstemp made it so; said again for a file replaced through a link

    def remove(self) -> bool:
        """Forget this server's tokens and registration; whether there were any."""
        self._record = {}
        try:
            self.path.unlink()
        except FileNotFoundError:
            return False
        return True


__all__ = ["FOLDER", "FileTokenStorage", "TokenFileError", "token_path"]
