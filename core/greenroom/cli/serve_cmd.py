"""``greenroom serve``: put the config's tools, deferred, in front of any MCP client."""

from __future__ import annotations

import os
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
    gateway = _gateway(path, per_client)
    try:
        if transport == "http":
            from greenroom.serve import serve_http

            anyio.run(lambda: serve_http(gateway, host=host, port=port, token=token))
        else:
            anyio.run(_stdio_until_signal, gateway)
    except KeyboardInterrupt:
        pass


def _gateway(path: Path, per_client: bool) -> Any:
    from greenroom.build.compose import build_runtime
    from greenroom.config import ConfigError

    try:
        rt = build_runtime(path, offline_model=True)
    except ConfigError as exc:
        fail(str(exc))
    except Exception as exc:  # a plugin failing to start must not print a traceback
        fail(f"{type(exc).__name__}: {exc}")
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
