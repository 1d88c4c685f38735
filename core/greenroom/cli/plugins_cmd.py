"""``greenroom plugins``: what is installed, what is enabled, and why something failed."""

from __future__ import annotations

import json
from typing import Annotated, Any

import typer
from rich.table import Table

from greenroom.cli.app import app, console, err_console
from greenroom.plugins import discover


@app.command("plugins")
def plugins_cmd(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False) -> None:
    """List installed plugins: name, distribution, version, hooks, status."""
    records = discover()
    rows: list[dict[str, Any]] = []
    from greenroom.plugins import select_enabled

    select_enabled(records, (), ())
    for r in records:
        rows.append(
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "entry_point": r.entry_point,
                "hooks": r.hooks(),
                "status": "error" if r.error else ("enabled" if r.enabled else "opt-in"),
                "error": r.error,
            }
        )
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="greenroom plugins")
    for col in ("name", "distribution", "version", "status", "hooks"):
        table.add_column(col)
    for row in rows:
        status = {"error": "[red]error[/]", "enabled": "[green]enabled[/]"}.get(row["status"], row["status"])
        hooks = ", ".join(h.removeprefix("greenroom_") for h in row["hooks"])
        table.add_row(row["name"], row["distribution"], row["version"], status, hooks)
    console.print(table)
    for row in rows:
        if row["error"]:
            err_console.print(f"[red]plugin {row['name']!r} failed to load:[/] {row['error']}", highlight=False)
