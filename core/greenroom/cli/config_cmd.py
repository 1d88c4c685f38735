"""``greenroom config``: check, show and document configuration files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer

from greenroom.cli.app import app, console, fail
from greenroom.config.errors import ConfigError
from greenroom.plugins import discover

config_app = typer.Typer(help="Check, show and document configuration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def _load(path: Path) -> Any:
    from greenroom.compose import load_runtime_config

    try:
        return load_runtime_config(path)
    except ConfigError as exc:
        fail(str(exc))


@config_app.command("check")
def config_check(path: Annotated[Path, typer.Argument(help="Config file (TOML).")]) -> None:
    """Validate a config file (and the files it extends) against every schema."""
    from greenroom.compose import plugin_configs

    cfg, records = _load(path)
    try:
        plugin_configs(cfg, records)
    except ConfigError as exc:
        fail(str(exc))
    console.print(
        f"[green]ok[/] {path} ({len(cfg.files)} file(s), plugins: "
        f"{', '.join(sorted(cfg.plugin_sections)) or 'defaults'})"
    )


@config_app.command("show")
def config_show(path: Annotated[Path, typer.Argument(help="Config file (TOML).")]) -> None:
    """Print the merged configuration (after extends), as JSON."""
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

    records = discover()
    healthy = {r.name: r.cls for r in records if r.cls is not None}
    if plugin is None:
        schema = core_schema()
        schema["properties"]["plugins"]["properties"].update({n: c.config_schema() for n, c in healthy.items()})
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

    records = [r for r in discover() if r.distribution == "greenroom"]  # first-party only: stable
    typer.echo(render_reference(records), nl=False)
