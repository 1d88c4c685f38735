"""``[serve]`` and ``[serve.oauth]``: what ``greenroom serve`` reads beside the runtime.

The gateway owns the top-level ``[serve]`` table (``GatewayPlugin.config_table``): core
checks a file's ``[serve]`` against these classes' schema when it loads the file, so an
error names the file and the dotted key (``serve.oauth.leeway``), and
``greenroom.plugin_config`` structures it. The flags of ``greenroom serve`` win over it.
"""

from __future__ import annotations

from typing import Literal

import attrs


@attrs.frozen
class ServeOAuthConfig:
    """OAuth 2.1 for ``greenroom serve --transport http``: the gateway as a resource server.

    Args:
        issuer: The authorization server's issuer URL; its metadata names the keys (JWKS)
            that sign access tokens. https, or http on loopback only. Needed here or as
            ``--oauth-issuer``, which wins.
        audience: This gateway's URL as clients reach it (the RFC 8707 resource); a token
            whose ``aud`` does not name it is refused. Needed here or as
            ``--oauth-audience``, which wins.
        required_scopes: Scopes every token must carry (403 otherwise).
        scopes: Per scope, the tools a caller without it never sees nor runs: tool-name
            globs, ``group:NAME`` or ``mcp:SERVER``.
        per_principal: Learn priors per principal (the token's ``sub``), as ``--per-client``
            does per client name.
        jwks_url: The issuer's key set, when its metadata does not say it.
        algorithms: Signing algorithms accepted (never ``none`` nor HMAC).
        leeway: Seconds of clock skew allowed on ``exp`` and ``nbf``.
    """

    issuer: str | None = None
    audience: str | None = None
    required_scopes: tuple[str, ...] = ()
    scopes: dict[str, tuple[str, ...]] = attrs.field(factory=dict)
    per_principal: bool = False
    jwks_url: str | None = None
    algorithms: tuple[str, ...] = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
    leeway: float = attrs.field(default=30.0, validator=attrs.validators.ge(0))


@attrs.frozen
class ServeConfig:
    """What ``greenroom serve`` reads beside the runtime.

    Args:
        drain_timeout: Seconds a stopping gateway lets the calls in progress finish
            (``--drain-timeout``); past it they are cancelled with an error.
        max_body_bytes: Largest HTTP request body taken, in bytes (``--max-body-bytes``);
            a larger one is answered 413.
        max_calls_per_client: Calls one client may have in progress at once
            (``--max-calls-per-client``); one more is refused at once with an error result.
        log_format: ``text`` or ``json`` (one JSON object per line, ``--log-format``).
        session_idle: Seconds a sessionless (MCP 2026-07-28) caller's run is kept while
            idle. Unset: ``GREENROOM_SERVE_SESSION_IDLE``, else 300.
        session_age: Seconds such a run lasts at most. Unset:
            ``GREENROOM_SERVE_SESSION_AGE``, else 1800.
        session_calls: Calls such a run makes at most. Unset:
            ``GREENROOM_SERVE_SESSION_CALLS``, else 200.
        oauth: OAuth 2.1 over HTTP: who may call the gateway, and what each caller sees.
    """

    drain_timeout: float = attrs.field(default=10.0, validator=attrs.validators.ge(0))
    max_body_bytes: int = attrs.field(default=4 * 1024 * 1024, validator=attrs.validators.ge(1))
    max_calls_per_client: int = attrs.field(default=16, validator=attrs.validators.ge(1))
    log_format: Literal["text", "json"] = "text"
    session_idle: float | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    session_age: float | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.gt(0)))
    session_calls: int | None = attrs.field(default=None, validator=attrs.validators.optional(attrs.validators.ge(1)))
    oauth: ServeOAuthConfig | None = None


__all__ = ["ServeConfig", "ServeOAuthConfig"]
