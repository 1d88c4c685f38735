"""Access tokens for the gateway as an OAuth 2.1 resource server: ``JwtVerifier``.

Access tokens are JWTs (RFC 9068) checked with PyJWT: the signature against the issuer's
key set (found from its metadata, RFC 8414 or OpenID discovery), ``iss``, ``aud`` naming
this gateway (RFC 8707), ``exp`` and ``nbf``. The SDK's auth components do the rest: its
bearer middleware answers 401 with ``WWW-Authenticate: Bearer resource_metadata=...``
and 403 for a missing required scope, and its route serves the Protected Resource
Metadata (RFC 9728). Anything that goes wrong while checking (keys that cannot be
fetched, a malformed token) refuses the token: nothing is let through unchecked.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import attrs

from greenroom_gateway.config import ServeOAuthConfig
from greenroom_gateway.oauth.settings import OAuthSetupError, endpoints

if TYPE_CHECKING:
    from mcp.server.auth.provider import AccessToken

log = logging.getLogger("greenroom.serve.oauth")

KEYS_FRESH = 600.0
"""Seconds the issuer's key set is used before it is fetched again."""
REFETCH_GAP = 30.0
"""A token signed by a key not in the set fetches it again, at most this often."""


@attrs.define
class _Keys:
    keys: Any = None  # a jwt.PyJWKSet
    fetched: float = float("-inf")


class JwtVerifier:
    """The SDK's ``TokenVerifier`` for JWT access tokens of one issuer and one audience."""

    def __init__(self, oauth: ServeOAuthConfig, *, timeout: float = 10.0) -> None:
        self.oauth = oauth
        self.timeout = timeout
        self.issuer, self.audience = endpoints(oauth)
        aud = self.audience.rstrip("/")
        self._audiences = [aud, aud + "/"]
        self._keys = _Keys()
        self._lock = anyio.Lock()
        self._jwks_url = oauth.jwks_url

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access, or None when it is not one this gateway accepts."""
        try:
            return await self._verify(token)
        except Exception as exc:  # whatever failed, the token is refused (never let through)
            log.warning("access token refused: %s", _say(exc))
            return None

    async def _verify(self, token: str) -> AccessToken | None:
        import jwt
        from mcp.server.auth.provider import AccessToken

        header = jwt.get_unverified_header(token)
        alg = header.get("alg")
        if alg not in self.oauth.algorithms:
            log.info("access token refused: algorithm %r is not accepted", alg)
            return None
        key = await self._key(header.get("kid"))
        if key is None:
            log.info("access token refused: no key of the issuer has id %r", header.get("kid"))
            return None
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key,
                algorithms=[alg],
                audience=self._audiences,
                issuer=self.issuer,
                leeway=self.oauth.leeway,
                options={"require": ["exp", "iss", "aud"]},
            )
        except jwt.PyJWTError as exc:
            log.info("access token refused: %s", exc)
            return None
        scopes = _scopes(claims)
        client = claims.get("client_id") or claims.get("azp") or claims.get("sub") or ""
        return AccessToken(
            token=token,
            client_id=str(client),
            scopes=scopes,
            # the SDK refuses a token past ``expires_at`` whatever PyJWT allowed: the leeway
            # it gave ``exp`` is the access's too (rounded up, as the SDK compares whole seconds)
            expires_at=math.ceil(claims["exp"] + self.oauth.leeway),
            resource=self.audience,
            subject=str(claims["sub"]) if claims.get("sub") is not None else None,
            claims={"iss": claims.get("iss")},
        )

    async def _key(self, kid: Any) -> Any:
        """The signing key with id ``kid`` (the only key when the token names none)."""
        now = time.monotonic()
        async with self._lock:
            stale = now - self._keys.fetched > KEYS_FRESH
            if self._keys.keys is None or stale:
                await self._fetch()
            key = _find(self._keys.keys, kid)
            if key is None and now - self._keys.fetched > REFETCH_GAP:  # the issuer may have rotated its keys
                await self._fetch()
                key = _find(self._keys.keys, kid)
        return key

    async def _fetch(self) -> None:
        import httpx2
        import jwt

        async with httpx2.AsyncClient(timeout=self.timeout, follow_redirects=False) as http:
            if self._jwks_url is None:
                self._jwks_url = await self._discover(http)
            response = await http.get(self._jwks_url, headers={"Accept": "application/json"})
            response.raise_for_status()
            keys = jwt.PyJWKSet.from_dict(response.json())
        self._keys = _Keys(keys, time.monotonic())

    async def _discover(self, http: Any) -> str:
        """The issuer's ``jwks_uri``, from the first metadata document that names the issuer."""
        tried: list[str] = []
        for url in metadata_urls(self.issuer):
            tried.append(url)
            try:
                response = await http.get(url, headers={"Accept": "application/json"})
                if response.status_code != 200:
                    continue
                meta = response.json()
            except Exception as exc:
                log.info("issuer metadata %s: %s", url, _say(exc))
                continue
            if not isinstance(meta, Mapping) or meta.get("issuer") != self.issuer:
                continue  # a document for another issuer is no answer (RFC 8414 section 3.3)
            jwks = meta.get("jwks_uri")
            if isinstance(jwks, str) and jwks.startswith(("https://", "http://")):
                return jwks
        raise OAuthSetupError(f"no metadata of issuer {self.issuer} names its keys (tried {', '.join(tried)})")


def metadata_urls(issuer: str) -> list[str]:
    """Where an issuer's metadata may be: RFC 8414 first, then OpenID discovery."""
    parts = urlsplit(issuer)
    origin = f"{parts.scheme}://{parts.netloc}"
    path = parts.path.rstrip("/")
    urls = [f"{origin}/.well-known/oauth-authorization-server{path}"]
    if path:
        urls.append(f"{origin}/.well-known/openid-configuration{path}")
    urls.append(f"{origin}{path}/.well-known/openid-configuration")
    return urls


def _find(keys: Any, kid: Any) -> Any:
    if keys is None:
        return None
    usable = [k for k in keys.keys if getattr(k, "public_key_use", None) in (None, "sig")]
    if kid is None:
        return usable[0].key if len(usable) == 1 else None
    for k in usable:
        if k.key_id == kid:
            return k.key
    return None


def _scopes(claims: Mapping[str, Any]) -> list[str]:
    scope = claims.get("scope")
    if isinstance(scope, str):
        return scope.split()
    scp = claims.get("scp")
    if isinstance(scp, str):
        return scp.split()
    if isinstance(scp, Sequence):
        return [str(s) for s in scp]
    return []


def _say(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}"


__all__ = ["JwtVerifier", "metadata_urls"]
