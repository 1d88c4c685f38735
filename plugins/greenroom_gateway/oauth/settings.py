"""OAuth settings for the gateway as a resource server (``[serve.oauth]``, ``--oauth-issuer``,
``--oauth-audience``): the flags over the file key by key, what cannot work refused with
where and why, and what the SDK's HTTP app is given to guard the endpoint.
"""

from __future__ import annotations

import ipaddress
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import attrs

from greenroom_gateway.config import ServeOAuthConfig

if TYPE_CHECKING:
    from mcp.server.auth.settings import AuthSettings

_SYMMETRIC = ("HS256", "HS384", "HS512", "none")


class OAuthSetupError(ValueError):
    """The OAuth settings cannot work: says which one and why."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def endpoints(oauth: ServeOAuthConfig) -> tuple[str, str]:
    """The issuer and the audience, which the file or the flags must have given."""
    if oauth.issuer is None or oauth.audience is None:
        missing = [k for k in ("issuer", "audience") if getattr(oauth, k) is None]
        flags = " and ".join(f"--oauth-{k}" for k in missing)
        raise OAuthSetupError(f"OAuth needs {flags} (or {' and '.join(missing)} in [serve.oauth])")
    return oauth.issuer, oauth.audience


def check_settings(oauth: ServeOAuthConfig, where: str = "[serve.oauth]") -> ServeOAuthConfig:
    """The settings, or ``OAuthSetupError`` naming what is wrong with them."""
    endpoints(oauth)
    for key, url in (("issuer", oauth.issuer), ("audience", oauth.audience), ("jwks_url", oauth.jwks_url)):
        if url is None:
            continue
        parts = urlsplit(url)
        if parts.scheme not in ("https", "http") or not parts.hostname:
            raise OAuthSetupError(f"{where} {key}: expected an http(s) URL, got {url!r}")
        if parts.fragment:
            raise OAuthSetupError(f"{where} {key}: a URL without a #fragment is expected, got {url!r}")
        if parts.scheme == "http" and key != "audience" and not is_loopback(parts.hostname):
            raise OAuthSetupError(f"{where} {key}: must be https (http only on loopback), got {url!r}")
    bad = [a for a in oauth.algorithms if a in _SYMMETRIC]
    if bad or not oauth.algorithms:
        raise OAuthSetupError(f"{where} algorithms: asymmetric signing algorithms only, got {list(oauth.algorithms)}")
    for scope, patterns in oauth.scopes.items():
        if not scope.strip() or any(c.isspace() for c in scope):
            raise OAuthSetupError(f"{where} scopes: {scope!r} is not a scope (no spaces, not empty)")
        from greenroom_gateway.oauth.views import check_pattern

        for i, pattern in enumerate(patterns):
            problem = check_pattern(pattern)
            if problem:
                raise OAuthSetupError(f"{where} scopes.{scope}[{i}]: {problem}")
    return oauth


def with_flags(oauth: ServeOAuthConfig | None, issuer: str | None, audience: str | None) -> ServeOAuthConfig | None:
    """``[serve.oauth]`` (or none) with ``--oauth-issuer`` and ``--oauth-audience`` over
    it, key by key; None when neither the file nor a flag asks for OAuth."""
    if oauth is None and issuer is None and audience is None:
        return None
    section = oauth or ServeOAuthConfig()
    return attrs.evolve(section, issuer=issuer or section.issuer, audience=audience or section.audience)


def auth_settings(oauth: ServeOAuthConfig) -> AuthSettings:
    """What the SDK's HTTP app needs to guard the endpoint and serve the metadata."""
    from mcp.server.auth.settings import AuthSettings

    issuer, audience = endpoints(oauth)
    # validated from strings: AnyHttpUrl(...) built directly adds a "/" to a bare origin, and
    # a client then finds the metadata's issuer is not the authorization server's own
    return AuthSettings.model_validate(
        {
            "issuer_url": issuer,
            "resource_server_url": audience,
            "required_scopes": list(oauth.required_scopes) or None,
            "validate_token_resource": True,  # checked here too: the verifier names the resource only when aud matched
        }
    )


__all__ = ["OAuthSetupError", "auth_settings", "check_settings", "endpoints", "is_loopback", "with_flags"]
