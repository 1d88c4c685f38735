"""``greenroom plugins``: what is installed, what is enabled, and why something failed."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from greenroom.cli.app import app, console, err_console

if TYPE_CHECKING:
    from greenroom.plugins import PluginRecord

_STYLE = {"failed": "[red]failed[/]", "enabled": "[green]enabled[/]"}  # by Status value


def plugin_rows(records: list[PluginRecord]) -> list[dict[str, Any]]:
    """One row per plugin. Each healthy plugin is also started once with its default
    config, so a constructor that raises shows here rather than in the next run."""
    from greenroom.plugins import Status, select_enabled, start_failure

    selection = select_enabled(records)
    rows: list[dict[str, Any]] = []
    for r in records:
        failure = start_failure(r)
        status = Status.FAILED if failure is not None else selection.status[r.name]
        rows.append(
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "entry_point": r.entry_point,
                "hooks": r.hooks(),
                "status": status.value,
                "error": failure.as_json() if failure is not None else None,
            }
        )
    return rows


@app.command("plugins")
def plugins_cmd(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False) -> None:
    """List installed plugins: name, distribution, version, hooks, status."""
    from rich.table import Table

    from greenroom.plugins import discover

    rows = plugin_rows(discover())
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="greenroom plugins")
    for col in ("name", "distribution", "version", "status", "hooks"):
        table.add_column(col)
    for row in rows:
        status = _STYLE.get(row["status"], row["status"])
        hooks = ", ".join(h.removeprefix("greenroom_") for h in row["hooks"])
        table.add_row(row["name"], row["distribution"], row["version"], status, hooks)
    console.print(table)
    for row in rows:
        if row["error"]:
            kind, message = row["error"]["kind"], escape(row["error"]["message"])
            err_console.print(f"[red]plugin {row['name']!r} failed ({kind}):[/] {message}", highlight=False)
