"""``greenroom config``: check, show and document configuration files.

Each command imports what it uses when it runs: ``greenroom --help`` imports this module."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated

import typer
from rich.markup import escape

from greenroom.cli.app import app, console, err_console, fail

config_app = typer.Typer(help="Check, show and document configuration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")


_LEVEL_STYLE = {"error": "bold red", "unreachable": "bold red", "warning": "yellow", "note": "cyan"}


@config_app.command("check")
def config_check(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    connect: Annotated[
        bool,
        typer.Option("--connect", help="Also start every MCP server and open every store (RunStart), then close them."),
    ] = False,
) -> None:
    """Check a config file as `greenroom run` would, without calling the model.

    Imports the tool modules, reads catalogs and checks every tool's schema, builds the
    model offline and reads the MCP listing caches. Exits 2 when the config is wrong, 1
    when only --connect failed (a server or store out of reach), 0 otherwise; warnings
    and notes never fail a check.
    """
    from greenroom.compose.check import check_config

    report = check_config(path, connect=connect)
    if report.exit_code == 0:
        console.print(f"[green]ok[/] {escape(report.summary())}", highlight=False, overflow="ignore", crop=False)
    for finding in report.findings.items:
        level = finding.level.value
        # messages quote user text and install hints like greenroom[openai]: never markup; a
        # path longer than the line stays whole (see fail)
        err_console.print(
            f"[{_LEVEL_STYLE[level]}]{level}:[/] {escape(str(finding))}", highlight=False, overflow="ignore", crop=False
        )
    if report.exit_code:
        raise typer.Exit(report.exit_code)


@config_app.command("show")
def config_show(path: Annotated[Path, typer.Argument(help="Config file (TOML).")]) -> None:
    """Print the merged configuration (after extends), as JSON."""
    from greenroom.config.errors import ConfigError
    from greenroom.config.loading import merged_document

    try:
        doc = merged_document(path)
    except ConfigError as exc:
        fail(str(exc))
    typer.echo(json.dumps(doc, indent=2, sort_keys=True))


@config_app.command("schema")
def config_schema(
    plugin: Annotated[str | None, typer.Argument(help="A plugin name; none: the whole file.")] = None,
) -> None:
    """Print the JSON Schema of a plugin's section, or of the whole config file."""
    from greenroom.config import core_schema
    from greenroom.plugins.discovery import discover

    records = discover()
    healthy = {r.name: r.cls for r in records if r.cls is not None}
    if plugin is None:
        schema = core_schema()
        owned = {n: c for n, c in healthy.items() if c.config_table}  # their own tables, not [plugins.NAME]
        schema["properties"].update({c.config_table: c.config_schema() for c in owned.values()})
        schema["properties"]["plugins"]["properties"].update(
            {n: c.config_schema() for n, c in healthy.items() if n not in owned}
        )
    elif plugin in healthy:
        schema = healthy[plugin].config_schema()
    else:
        failed = {r.name: r.failure for r in records if r.failure is not None}
        if plugin in failed:
            fail(f"plugin {plugin!r} is installed but failed to load: {failed[plugin]}")
        fail(f"unknown plugin {plugin!r} (installed: {', '.join(healthy)})")
    typer.echo(json.dumps(schema, indent=2))


@config_app.command("reference")
def config_reference() -> None:
    """Print the configuration reference (Markdown) generated from every schema."""
    from greenroom.config.reference import render_reference
    from greenroom.plugins.discovery import discover

    records = [r for r in discover() if r.distribution == "greenroom"]  # first-party only: stable
    typer.echo(render_reference(records), nl=False)
