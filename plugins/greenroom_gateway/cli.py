"""``greenroom serve``: put the config's tools, deferred, in front of any MCP client.

Its options, each checked with a one-line error (never a traceback), each flag over its
``[serve]`` key; the runtime built from the config without starting a server (the gateway
lists them once it answers, ``upstream``); then the transport until the client leaves or
a signal stops it, every client's run ended on the way out.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from greenroom.kit import fail

if TYPE_CHECKING:
    from greenroom_gateway.config import ServeConfig, ServeOAuthConfig
    from greenroom_gateway.gateway import Gateway
    from greenroom_gateway.sessions import Limits


def serve_cmd(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    transport: Annotated[str, typer.Option("--transport", help="stdio (one client) or http (any number).")] = "stdio",
    host: Annotated[str, typer.Option("--host", help="Address to bind over HTTP (loopback by default).")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="Port over HTTP (0: any free one, announced on stderr).")] = 8765,
    token_env: Annotated[
        str | None,
        typer.Option("--token-env", metavar="VAR", help="Over HTTP, require 'Authorization: Bearer <$VAR>'."),
    ] = None,
    per_client: Annotated[
        bool, typer.Option("--per-client", help="Learn priors per client name (from initialize) too.")
    ] = False,
    oauth_issuer: Annotated[
        str | None,
        typer.Option("--oauth-issuer", metavar="URL", help="Over HTTP, require access tokens of this issuer."),
    ] = None,
    oauth_audience: Annotated[
        str | None,
        typer.Option("--oauth-audience", metavar="URL", help="This gateway's URL, the audience tokens must name."),
    ] = None,
    drain_timeout: Annotated[
        float | None,
        typer.Option(
            "--drain-timeout",
            metavar="SECONDS",
            help="Over HTTP, on SIGTERM or Ctrl-C, how long calls in progress may finish (default 10).",
        ),
    ] = None,
    max_body_bytes: Annotated[
        int | None,
        typer.Option("--max-body-bytes", metavar="BYTES", help="Over HTTP, the largest request body (default 4 MiB)."),
    ] = None,
    max_calls_per_client: Annotated[
        int | None,
        typer.Option("--max-calls-per-client", metavar="N", help="Calls one client may have in progress (default 16)."),
    ] = None,
    log_format: Annotated[
        str | None, typer.Option("--log-format", help="text (default) or json: one JSON object per line on stderr.")
    ] = None,
    home: Annotated[
        Path | None,
        typer.Option(
            "--home",
            metavar="DIR",
            help="greenroom's state folder (priors, listings, tokens), as GREENROOM_HOME sets it: "
            "MCP clients start the gateway without your environment.",
        ),
    ] = None,
    enable: Annotated[
        list[str] | None,
        typer.Option(
            "--enable",
            metavar="PLUGIN",
            help="Turn on an installed plugin for this gateway, as [plugins] enable does "
            "(repeatable): what it adds, clients are offered.",
        ),
    ] = None,
    experimental: Annotated[
        list[str] | None,
        typer.Option(
            "--experimental",
            metavar="FEATURE",
            help="Turn on an experimental feature (repeatable): progressive-disclosure (tools/catalog, "
            "tools/describe and tools/manifest, after the MCP drafts; docs/serve.md).",
        ),
    ] = None,
) -> None:
    """Serve the config's tools as one MCP server: a tool search and the eager tools up
    front, every other tool found on demand, priors learned from every client's calls."""
    import anyio

    if home is not None:
        # the variable itself, so everything that finds the state folder by it (the plugins'
        # stores, the listing and token caches) finds this one
        os.environ["GREENROOM_HOME"] = str(home.expanduser().resolve())
    if transport not in ("stdio", "http"):
        fail(f"--transport must be 'stdio' or 'http', not {transport!r}")
    try:
        import httpx2  # noqa: F401  (the MCP SDK's HTTP client, then the SDK)
        import mcp  # noqa: F401
    except ImportError as exc:
        fail(f"greenroom serve: the MCP SDK (2.x) is not installed: pip install 'greenroom[mcp]' ({exc})")
    from greenroom_gateway.ops import logs

    section = _serve_section(path)
    ops = _operations(section, transport, drain_timeout, max_body_bytes, max_calls_per_client, log_format)
    logs.configure(ops["log_format"])
    token: str | None = None
    if token_env is not None:
        if transport != "http":
            fail("--token-env applies to --transport http only")
        token = os.environ.get(token_env)
        if not token:
            fail(f"--token-env {token_env}: the environment variable {token_env} is not set or empty")
    oauth = _oauth(section, oauth_issuer, oauth_audience)
    if oauth is not None:
        if transport != "http":
            fail("OAuth ([serve.oauth], --oauth-issuer) applies to --transport http only")
        if token is not None:
            fail("--token-env and OAuth exclude each other: keep --token-env for loopback, OAuth beyond it")
    elif transport == "http" and token is None and not _loopback(host):
        warning = (
            f"listening on {host} without authentication: anyone who reaches it can call every tool "
            "(see docs/security.md)"
        )
        if ops["log_format"] == "json":
            logging.getLogger("greenroom.serve").warning("%s", warning)
        else:
            print(f"greenroom serve: warning: {warning}", file=sys.stderr)
    features = _experimental(experimental or ())
    limits = _session_limits(section)
    gateway = _gateway(path, per_client, oauth, ops["max_calls_per_client"], limits, enable or (), features)
    try:
        if transport == "http":
            from greenroom_gateway.transport import serve_http

            anyio.run(
                lambda: serve_http(
                    gateway,
                    host=host,
                    port=port,
                    token=token,
                    oauth=oauth,
                    drain_timeout=ops["drain_timeout"],
                    max_body_bytes=ops["max_body_bytes"],
                    json_logs=ops["log_format"] == "json",
                )
            )
        else:
            anyio.run(_stdio_until_signal, gateway)
    except KeyboardInterrupt:
        pass


def _serve_section(path: Path) -> ServeConfig:
    """The config's ``[serve]`` section (its defaults when it has none); the whole file is
    checked here, so what is wrong anywhere in it is said before anything starts."""
    from greenroom import ConfigError, load_runtime_config, plugin_config
    from greenroom_gateway.plugin import GatewayPlugin

    try:
        cfg, _ = load_runtime_config(path)
        section: ServeConfig = plugin_config(GatewayPlugin, cfg)
    except ConfigError as exc:  # ConfigErrors too: one line per bad key, each naming file and key
        fail(str(exc))
    except OSError as exc:
        fail(f"{path}: {exc}")
    return section


def _operations(
    section: ServeConfig,
    transport: str,
    drain_timeout: float | None,
    max_body_bytes: int | None,
    max_calls_per_client: int | None,
    log_format: str | None,
) -> dict[str, Any]:
    """How the process is operated: each flag, else its ``[serve]`` key, checked."""
    import math

    if transport != "http":
        for flag, value in (("--drain-timeout", drain_timeout), ("--max-body-bytes", max_body_bytes)):
            if value is not None:
                fail(f"{flag} applies to --transport http only")
    if drain_timeout is not None and not (math.isfinite(drain_timeout) and drain_timeout >= 0):
        fail(f"--drain-timeout must be a number of seconds, 0 or more, not {drain_timeout:g}")
    if max_body_bytes is not None and max_body_bytes < 1:
        fail(f"--max-body-bytes must be a positive number of bytes, not {max_body_bytes}")
    if max_calls_per_client is not None and max_calls_per_client < 1:
        fail(f"--max-calls-per-client must be 1 or more, not {max_calls_per_client}")
    if log_format is not None and log_format not in ("text", "json"):
        fail(f"--log-format must be 'text' or 'json', not {log_format!r}")
    return {
        "drain_timeout": section.drain_timeout if drain_timeout is None else drain_timeout,
        "max_body_bytes": section.max_body_bytes if max_body_bytes is None else max_body_bytes,
        "max_calls_per_client": section.max_calls_per_client if max_calls_per_client is None else max_calls_per_client,
        "log_format": section.log_format if log_format is None else log_format,
    }


def _oauth(serve: ServeConfig, issuer: str | None, audience: str | None) -> ServeOAuthConfig | None:
    """The OAuth settings: ``[serve.oauth]`` with the flags over it; None without either."""
    from greenroom_gateway.oauth.settings import OAuthSetupError, check_settings, with_flags

    section = with_flags(serve.oauth, issuer, audience)
    if section is None:
        return None
    try:
        import jwt  # noqa: F401  (the access tokens' checks)
    except ImportError:
        fail("OAuth needs PyJWT with its crypto: pip install 'greenroom[oauth]'")
    where = "[serve.oauth]" if issuer is None and audience is None else "OAuth settings"
    try:
        return check_settings(section, where)
    except OAuthSetupError as exc:
        fail(str(exc))


def _loopback(host: str) -> bool:
    from greenroom_gateway.oauth.settings import is_loopback

    return is_loopback(host)


def _experimental(given: Sequence[str]) -> frozenset[str]:
    """The experimental features asked for, each one the gateway has."""
    from greenroom_gateway.disclosure import FLAG

    known = (FLAG,)
    for name in given:
        if name not in known:
            fail(f"--experimental {name!r}: no such experimental feature (there is: {', '.join(known)})")
    return frozenset(given)


def _session_limits(section: ServeConfig) -> Limits:
    """How long a sessionless caller's run is kept: the ``[serve]`` keys, else the variables."""
    from greenroom_gateway.sessions import Limits

    return Limits.from_env(idle=section.session_idle, age=section.session_age, calls=section.session_calls)


def _gateway(
    path: Path,
    per_client: bool,
    oauth: ServeOAuthConfig | None = None,
    max_calls_per_client: int = 16,
    session_limits: Limits | None = None,
    enable: Sequence[str] = (),
    experimental: frozenset[str] = frozenset(),
) -> Gateway:
    from greenroom import ConfigError, build_runtime
    from greenroom_gateway.gateway import Gateway
    from greenroom_gateway.oauth.views import ScopeRules

    try:
        # no server starts here: the gateway lists them once it answers (``upstream``)
        rt = build_runtime(path, offline_model=True, prepare_mcp=False, enable=enable)
    except ConfigError as exc:
        fail(str(exc))
    except Exception as exc:  # a plugin failing to start must not print a traceback
        fail(f"{type(exc).__name__}: {exc}")
    return Gateway(
        rt,
        per_client=per_client,
        max_calls_per_client=max_calls_per_client,
        session_limits=session_limits,
        scopes=ScopeRules(oauth.scopes) if oauth is not None else None,
        per_principal=oauth is not None and oauth.per_principal,
        experimental=experimental,
    )


async def _stdio_until_signal(gateway: Gateway) -> None:
    """Serve over stdio; SIGTERM or SIGINT end it as cleanly as closing stdin does: every
    client's run ends and the upstream servers stop, then the process exits. (The SDK
    reads stdin in a worker thread, which nothing can interrupt: waiting for it to end
    would wait for the client to close stdin.)"""
    import signal
    import sys

    import anyio

    from greenroom_gateway.transport import serve_stdio

    async with anyio.create_task_group() as tg:

        async def watch() -> None:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for _ in signals:
                    with anyio.CancelScope(shield=True):
                        await gateway.aclose()
                    sys.stdout.flush()
                    sys.stderr.flush()
                    os._exit(0)

        tg.start_soon(watch)
        await serve_stdio(gateway)
        tg.cancel_scope.cancel()
