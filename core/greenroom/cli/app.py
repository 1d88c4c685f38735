"""The ``greenroom`` Typer application, its error printing, and the plugins' commands.

Core commands live in the modules beside this one and register on ``app`` when
``greenroom.cli`` is imported; plugins add theirs through ``greenroom_cli_commands``.
Start-up pays only for what the command asks for: a core command never loads plugins,
the top-level help lists the plugins' commands from what the last real load recorded
(``greenroom.cli.surface``), and only a plugin's command, or a name no core command has,
loads the plugins themselves.
"""

from __future__ import annotations

import atexit
import gc
import sys
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

if TYPE_CHECKING:
    from greenroom.plugins.discovery import PluginRecord

HOOK = "greenroom_cli_commands"
_registered: list[object] = []  # exit hooks registered once per process

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="greenroom",
    help="Deferred tool schemas, tool search and a plugin-based agent runtime.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
    # Help as click formats it, for every command (plugins' too): text is never read as
    # markup (``[[tools.mcp]]`` stays), each paragraph is wrapped once to the terminal
    # (Rich kept the source's line breaks, leaving lone words), and a flag shows no type.
    rich_markup_mode=None,
    context_settings={"help_option_names": ["-h", "--help"]},
)


def _print_version(asked: bool) -> None:
    if asked:
        from greenroom import __version__

        typer.echo(f"greenroom {__version__}")
        raise typer.Exit()


@app.callback()
def _options(
    version: Annotated[
        bool,
        typer.Option("--version", is_eager=True, callback=_print_version, help="Print the version and exit."),
    ] = False,
) -> None:
    """The options before a command (``--version``)."""


def fail(message: str, code: int = 2) -> NoReturn:
    from greenroom._support.redact import redact_known

    # messages quote user text and install hints like greenroom[openai]: never markup; and
    # text from servers and SDKs, which may echo a key: every secret greenroom knows is masked;
    # a word longer than the line (a file's path) stays whole, to be copied, never folded
    err_console.print(
        f"[bold red]error:[/] {escape(redact_known(message))}", highlight=False, overflow="ignore", crop=False
    )
    raise typer.Exit(code)


def need_mcp(command: str) -> None:
    """Stop ``command`` with one line naming the extra to install when the MCP SDK is missing
    (the advice ``greenroom run`` gives for a config's MCP servers), never a traceback."""
    try:
        import greenroom.mcp.sdk  # noqa: F401
    except ImportError as exc:
        from greenroom.mcp.errors import sdk_missing

        fail(f"{command}: {sdk_missing(exc)}")


def add_plugin_commands(target: typer.Typer, records: list[PluginRecord] | None = None) -> list[str]:
    """Let every enabled, healthy plugin add its subcommands, each in its own try: a plugin
    that fails to start or to add them is reported and skipped. Returns who added some."""
    added, skipped = _load_plugin_commands(target, records)
    for reason in skipped:
        _skipped(reason)
    return added


def _load_plugin_commands(target: typer.Typer, records: list[PluginRecord] | None) -> tuple[list[str], list[str]]:
    """Who added commands to ``target``, and why each plugin that did not was skipped."""
    import inspect

    from greenroom.plugins.discovery import PluginStartError, discover, select_enabled, start

    recs = records if records is not None else discover()
    selection = select_enabled(recs)
    added: list[str] = []
    skipped: list[str] = []
    for r in recs:
        if not selection.enabled(r.name) or HOOK not in r.hooks():
            continue  # plugins without commands are not started: the CLI starts fast
        try:
            answer = getattr(start(r), HOOK)(app=target)
            if inspect.isawaitable(answer):
                answer.close()  # type: ignore[attr-defined]
                raise TypeError(f"{HOOK} must be a plain 'def', not 'async def'")
        except PluginStartError as exc:
            skipped.append(str(exc))
            continue
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
            skipped.append(f"plugin {r.name!r} (distribution {r.label}) failed in hook {HOOK}: {failure}")
            continue
        added.append(r.name)
    return added, skipped


def _skipped(reason: str) -> None:
    err_console.print(f"[yellow]warning:[/] {escape(reason)} (its commands are skipped)", highlight=False)


def command_names(target: typer.Typer) -> set[str]:
    """The names of the commands and groups registered on ``target`` so far."""
    commands = target.registered_commands
    names = {typer.main.get_command_name(c.name or c.callback.__name__) for c in commands if c.callback}
    names.update(g.name for g in target.registered_groups if isinstance(g.name, str))
    return names


def _no_collection_at_exit() -> None:
    """What a command leaves alive goes with the process: the interpreter's last
    collections, which scan every object still tracked, are spared it (after a run over
    100,000 tools they took 0.7 s). Registered as the command starts, so it runs after
    the exit hooks the command registers (servers stopped), which run as ever."""
    gc.freeze()


def main(argv: list[str] | None = None) -> None:
    from greenroom._support.text import safe_streams

    if _no_collection_at_exit not in _registered:
        _registered.append(_no_collection_at_exit)
        atexit.register(_no_collection_at_exit)
    # text that is not valid UTF-8 (a file name, an argument) is shown, never a crash
    safe_streams()
    args = list(argv) if argv is not None else sys.argv[1:]
    _add_what_is_asked(args)
    app(args=args, prog_name="greenroom")


def _add_what_is_asked(args: list[str]) -> None:
    """Add to ``app`` what the plugins contribute that this command line needs."""
    if args[:1] == ["--version"]:
        return
    if args and not args[0].startswith("-"):
        if args[0] not in command_names(app):
            add_plugin_commands(app)  # a plugin's command, or a name to suggest others for
        return
    # no command: the top-level help, or a usage error that prints the usage line
    from greenroom.cli import surface

    known = surface.cached()
    if known is None:
        known = surface.record(app, lambda target: _load_plugin_commands(target, None)[1], command_names(app))
    else:
        surface.add_listed(app, known[0])
    for reason in known[1]:
        _skipped(reason)
