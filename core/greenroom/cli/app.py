"""The ``greenroom`` Typer application, its error printing, and the plugins' commands.

Core commands live in the modules beside this one and register on ``app`` when
``greenroom.cli`` is imported; plugins add theirs through ``greenroom_cli_commands``.
"""

from __future__ import annotations

import sys

import typer
from rich.console import Console
from rich.markup import escape

from greenroom.plugins import PluginHost, PluginRecord, discover, make_plugin_host

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="greenroom",
    help="Deferred tool schemas, tool search and a plugin-based agent runtime.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def fail(message: str, code: int = 2) -> None:
    # messages quote user text and install hints like greenroom[openai]: never markup
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def add_plugin_commands(target: typer.Typer, records: list[PluginRecord] | None = None) -> PluginHost | None:
    """Let every loadable plugin add its subcommands; failures are reported, not fatal."""
    try:
        host = make_plugin_host(records=records if records is not None else discover())
    except Exception as exc:
        err_console.print(f"[yellow]warning:[/] plugins unavailable for commands: {exc}", highlight=False)
        return None
    for name, plugin in host.pm.list_name_plugin():
        impl = getattr(plugin, "greenroom_cli_commands", None)
        if impl is None:
            continue
        try:
            impl(app=target)
        except Exception as exc:
            err_console.print(f"[yellow]warning:[/] plugin {name!r} could not add its commands: {exc}", highlight=False)
    return host


def main(argv: list[str] | None = None) -> None:
    add_plugin_commands(app)
    app(args=argv if argv is not None else sys.argv[1:], prog_name="greenroom")
