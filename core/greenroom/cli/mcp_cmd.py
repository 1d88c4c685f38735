"""``greenroom mcp``: log in to upstream MCP servers that use OAuth 2.1, probe a server
through the same client, and forget stored tokens.

Tokens, codes and client secrets are never printed: what the CLI prints passes through
``fail``'s masking, and the stored ones are remembered as secrets when read."""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from greenroom.cli.app import app, console, err_console, fail, need_mcp

if TYPE_CHECKING:
    from greenroom.config.model import McpServerConfig
    from greenroom.mcp.listing import McpListing

Then = Callable[[Any], Awaitable[None]]

mcp_app = typer.Typer(help="Log in to remote MCP servers (OAuth) and probe them.", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")

Headless = Annotated[
    bool,
    typer.Option("--headless", help="No browser here: print the URL, read the redirected URL (or code) from stdin."),
]
NoBrowser = Annotated[bool, typer.Option("--no-browser", help="Print the sign-in URL without opening a browser.")]
Unattended = Annotated[
    bool,
    typer.Option(
        "--unattended",
        help="No person signs in: fetch the sign-in URL here and take the code from its redirect "
        "(for authorization servers that approve at once, such as a CI identity provider).",
    ),
]


def _server(path: Path, name: str) -> McpServerConfig:
    from greenroom.compose.build import load_runtime_config
    from greenroom.config import ConfigError, ConfigErrors

    try:
        cfg, _ = load_runtime_config(path)
    except (ConfigError, ConfigErrors) as exc:
        fail(str(exc))
    except OSError as exc:
        fail(f"{path}: {exc}")
    servers = {s.name: s for s in cfg.tools.mcp}
    server = servers.get(name)
    if server is None:
        fail(f"{path}: no [[tools.mcp]] server is named {name!r} (servers: {', '.join(servers) or 'none'})")
    if not server.url:
        fail(f"{path}: MCP server {name!r} is a stdio server; OAuth is for streamable-HTTP servers (url)")
    return server


def _say(text: str) -> None:
    err_console.print(escape(text), highlight=False, soft_wrap=True)


def _connect(
    server: McpServerConfig,
    *,
    fresh: bool,
    headless: bool,
    no_browser: bool,
    unattended: bool = False,
    then: Then | None = None,
) -> tuple[McpListing, bool]:
    import anyio

    need_mcp(f"greenroom mcp {'login' if fresh else 'probe'}")
    from greenroom._support.redact import public_url
    from greenroom.mcp.oauth.login import connect

    def run() -> Awaitable[tuple[McpListing, bool]]:
        return connect(
            server,
            say=_say,
            fresh=fresh,
            headless=headless,
            unattended=unattended,
            open_browser=not no_browser,
            then=then,
        )

    try:
        return anyio.run(run)
    except KeyboardInterrupt:
        fail("interrupted", 130)
    except Exception as exc:
        leaf: BaseException = exc
        while inner := getattr(leaf, "exceptions", None):  # the SDK's task groups wrap it
            leaf = inner[0]
        where = f"MCP server {server.name!r} ({public_url(server.url or '')})"
        fail(f"{where}: {'login' if fresh else 'connection'} failed: {type(leaf).__name__}: {leaf}", 1)


def _print_tools(listing: McpListing, as_json: bool, called: Sequence[Any] = ()) -> None:
    """The tools as a table (or JSON); ``called``: the result of the tool probe called too."""
    from greenroom._support.redact import mask_json, redact_known

    if as_json:
        tools = [{"name": t.name, "title": t.title, "description": t.description} for t in listing.tools]
        out: dict[str, Any] = {"server": listing.server_name, "version": listing.server_version, "tools": tools}
        if called:  # a careless tool may echo the token: every known secret is masked
            out["result"] = mask_json(called[0].model_dump(mode="json", by_alias=True, exclude_none=True), redact_known)
        typer.echo(json.dumps(out))
        return
    from rich.table import Table

    table = Table(title=f"{listing.server_name or 'server'}: {len(listing.tools)} tools", width=80)
    table.add_column("tool", no_wrap=True, overflow="fold")
    table.add_column("description", overflow="fold")
    for t in listing.tools:
        first = (t.description or "").strip().splitlines()
        table.add_row(escape(t.name), escape(first[0] if first else ""))
    console.print(table)
    if called:
        texts = [block.text for block in called[0].content if getattr(block, "type", None) == "text"]
        kinds = [f"[{block.type}]" for block in called[0].content if getattr(block, "type", None) != "text"]
        console.print(escape(redact_known("\n".join(texts + kinds))), highlight=False, soft_wrap=True)


@mcp_app.command("login")
def mcp_login(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    name: Annotated[str, typer.Argument(help="The [[tools.mcp]] server's name.")],
    headless: Headless = False,
    no_browser: NoBrowser = False,
    unattended: Unattended = False,
) -> None:
    """Log in to an HTTP server that uses OAuth 2.1 and keep its tokens (0600, refreshed).

    Runs the authorization-code flow with PKCE: the browser's redirect comes back to a
    listener on 127.0.0.1 (or, with --headless, is pasted on stdin; with --unattended,
    greenroom follows the sign-in URL itself). The client is the one configured in the
    server's [tools.mcp.oauth] table, else one registered dynamically.
    """
    server = _server(path, name)
    listing, asked = _connect(server, fresh=True, headless=headless, no_browser=no_browser, unattended=unattended)
    if not asked:
        err_console.print(f"MCP server {escape(name)!r} did not ask for a login; nothing stored", highlight=False)
    else:
        err_console.print(f"[green]logged in[/] to MCP server {escape(name)!r}", highlight=False)
    console.print(f"{len(listing.tools)} tools", highlight=False)


@mcp_app.command("logout")
def mcp_logout(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    name: Annotated[str, typer.Argument(help="The [[tools.mcp]] server's name.")],
) -> None:
    """Forget the tokens and client registration stored for a server."""
    from greenroom.mcp.oauth.store import token_path

    server = _server(path, name)
    file = token_path(server.name, server.url or "")
    try:
        file.unlink()
    except FileNotFoundError:
        err_console.print(f"no stored tokens for MCP server {escape(name)!r}", highlight=False)
        return
    except OSError as exc:
        fail(f"MCP server {name!r}: cannot remove {file}: {exc.strerror or exc}", 1)
    err_console.print(f"logged out of MCP server {escape(name)!r}", highlight=False)


@mcp_app.command("probe")
def mcp_probe(
    url: Annotated[str, typer.Argument(help="A streamable-HTTP MCP endpoint, such as https://mcp.example.com/mcp.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the tools as JSON.")] = False,
    headless: Headless = False,
    no_browser: NoBrowser = False,
    scope: Annotated[list[str] | None, typer.Option("--scope", help="A scope to ask for (repeatable).")] = None,
    client_id: Annotated[str | None, typer.Option("--client-id", help="A pre-registered client's id.")] = None,
    client_secret_env: Annotated[
        str | None, typer.Option("--client-secret-env", help="The variable holding that client's secret.")
    ] = None,
    client_metadata_url: Annotated[
        str | None, typer.Option("--client-metadata-url", help="greenroom's client ID metadata document (https).")
    ] = None,
    unattended: Unattended = False,
    call: Annotated[str | None, typer.Option("--call", help="Then call this tool and print its result.")] = None,
    arguments: Annotated[str, typer.Option("--arguments", help="The call's arguments, a JSON object.")] = "{}",
) -> None:
    """Connect to a server with greenroom's client (logging in if it asks) and list its tools;
    with --call, call one of them too (logging in again if the call needs more scopes).

    Tokens are kept as for a configured server named after the URL's host, so a second
    probe reuses (and refreshes) them. The --client-* options are those of [tools.mcp.oauth]."""
    from urllib.parse import urlsplit

    from greenroom.config.model import McpOAuthConfig, McpServerConfig
    from greenroom.mcp.checks import url_problem

    problem = url_problem(url)
    if problem:
        fail(problem)
    try:
        args = json.loads(arguments)
    except ValueError as exc:
        fail(f"--arguments is not JSON: {exc}")
    if not isinstance(args, dict):
        fail('--arguments must be a JSON object, such as \'{"city": "Oslo"}\'')
    host = urlsplit(url).netloc.rpartition("@")[2]
    oauth = McpOAuthConfig(
        client_id=client_id,
        client_secret_env=client_secret_env,
        client_metadata_url=client_metadata_url,
        scopes=tuple(scope or ()),
    )
    server = McpServerConfig(name=f"probe-{host}", url=url, oauth=oauth)
    called: list[Any] = []

    async def call_it(session: Any) -> None:
        if call is not None:
            called.append(await session.call_tool(call, args))

    listing, _ = _connect(
        server, fresh=False, headless=headless, no_browser=no_browser, unattended=unattended, then=call_it
    )
    _print_tools(listing, as_json, called)
    sys.stdout.flush()
    if called and called[0].is_error:
        fail(f"the tool {call!r} answered with an error", 1)


__all__ = ["mcp_app"]
