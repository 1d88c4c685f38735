"""``greenroom serve``: put the config's tools, deferred, in front of any MCP client."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Annotated, Any

import typer

from greenroom.cli.app import app, fail


@app.command("serve")
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
) -> None:
    """Serve the config's tools as one MCP server: a tool search and the eager tools up
    front, every other tool found on demand, priors learned from every client's calls."""
    import anyio

    if transport not in ("stdio", "http"):
        fail(f"--transport must be 'stdio' or 'http', not {transport!r}")
    token: str | None = None
    if token_env is not None:
        if transport != "http":
            fail("--token-env applies to --transport http only")
        token = os.environ.get(token_env)
        if not token:
            fail(f"--token-env {token_env}: the environment variable {token_env} is not set or empty")
    oauth = _oauth(path, oauth_issuer, oauth_audience)
    if oauth is not None:
        if transport != "http":
            fail("OAuth ([serve.oauth], --oauth-issuer) applies to --transport http only")
        if token is not None:
            fail("--token-env and OAuth exclude each other: keep --token-env for loopback, OAuth beyond it")
    elif transport == "http" and token is None and not _loopback(host):
        print(
            f"greenroom serve: warning: listening on {host} without authentication: anyone who reaches it "
            "can call every tool (see docs/security.md)",
            file=sys.stderr,
        )
    gateway = _gateway(path, per_client, oauth)
    try:
        if transport == "http":
            from greenroom.serve import serve_http

            anyio.run(lambda: serve_http(gateway, host=host, port=port, token=token, oauth=oauth))
        else:
            anyio.run(_stdio_until_signal, gateway)
    except KeyboardInterrupt:
        pass


def _oauth(path: Path, issuer: str | None, audience: str | None) -> Any:
    """The OAuth settings: ``[serve.oauth]`` with the flags over it; None without either."""
    import attrs

    from greenroom.config import ConfigError, ConfigErrors
    from greenroom.config.model import ServeOAuthConfig
    from greenroom.serve.oauth import OAuthSetupError, check_settings, serve_section

    try:
        section = serve_section(str(path)).oauth
    except (ConfigError, ConfigErrors) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{path}: {exc}")
    if section is None and issuer is None and audience is None:
        return None
    if section is None:
        if issuer is None or audience is None:
            fail("OAuth needs both --oauth-issuer and --oauth-audience (or a [serve.oauth] section)")
        section = ServeOAuthConfig(issuer=issuer, audience=audience)
    else:
        section = attrs.evolve(section, issuer=issuer or section.issuer, audience=audience or section.audience)
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
    from greenroom.serve.oauth import is_loopback

    return is_loopback(host)


def _gateway(path: Path, per_client: bool, oauth: Any = None) -> Any:
    from greenroom.build.compose import build_runtime
    from greenroom.config import ConfigError

    try:
        rt = build_runtime(path, offline_model=True)
    except ConfigError as exc:
        fail(str(exc))
    except Exception as exc:  # a plugin failing to start must not print a traceback
        fail(f"{type(exc).__name__}: {exc}")
    if oauth is not None:
        from greenroom.serve.views import CallerGateway, ScopeRules

        return CallerGateway(rt, ScopeRules(oauth.scopes), per_principal=oauth.per_principal, per_client=per_client)
    from greenroom.serve import Gateway

    return Gateway(rt, per_client=per_client)


async def _stdio_until_signal(gateway: Any) -> None:
    """Serve over stdio; SIGTERM or SIGINT end it as cleanly as closing stdin does: every
    client's run ends and the upstream servers stop, then the process exits. (The SDK
    reads stdin in a worker thread, which nothing can interrupt: waiting for it to end
    would wait for the client to close stdin.)"""
    import signal
    import sys

    import anyio

    from greenroom.serve import serve_stdio

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
