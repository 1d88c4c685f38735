"""The ``greenroom`` Typer application, its error printing, and the plugins' commands.

Core commands live in the modules beside this one and register on ``app`` when
``greenroom.cli`` is imported; plugins add theirs through ``greenroom_cli_commands``.
"""

from __future__ import annotations

import inspect
import sys
from typing import NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from greenroom.plugins import PluginRecord, PluginStartError, discover, select_enabled, start
from greenroom.redact import redact_known

HOOK = "greenroom_cli_commands"

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="greenroom",
    help="Deferred tool schemas, tool search and a plugin-based agent runtime.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)


def fail(message: str, code: int = 2) -> NoReturn:
    # messages quote user text and install hints like greenroom[openai]: never markup; and
    # text from servers and SDKs, which may echo a key: every secret greenroom knows is masked
    err_console.print(f"[bold red]error:[/] {escape(redact_known(message))}", highlight=False)
    raise typer.Exit(code)


def add_plugin_commands(target: typer.Typer, records: list[PluginRecord] | None = None) -> list[str]:
    """Let every enabled, healthy plugin add its subcommands, each in its own try: a plugin
    that fails to start or to add them is reported and skipped. Returns who added some."""
    recs = records if records is not None else discover()
    selection = select_enabled(recs)
    added: list[str] = []
    for r in recs:
        if not selection.enabled(r.name) or HOOK not in r.hooks():
            continue  # plugins without commands are not started: the CLI starts fast
        try:
            answer = getattr(start(r), HOOK)(app=target)
            if inspect.isawaitable(answer):
                answer.close()  # type: ignore[attr-defined]
                raise TypeError(f"{HOOK} must be a plain 'def', not 'async def'")
        except PluginStartError as exc:
            _skipped(str(exc))
            continue
        except Exception as exc:
            _skipped(f"plugin {r.name!r} (distribution {r.label}) failed in hook {HOOK}: {type(exc).__name__}: {exc}")
            continue
        added.append(r.name)
    return added


def _skipped(reason: str) -> None:
    err_console.print(f"[yellow]warning:[/] {escape(reason)} (its commands are skipped)", highlight=False)


def main(argv: list[str] | None = None) -> None:
    add_plugin_commands(app)
    app(args=argv if argv is not None else sys.argv[1:], prog_name="greenroom")
