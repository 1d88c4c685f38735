"""``greenroom plugins``: what is installed, what is enabled, and why something failed
or cannot work here.

A plugin class may say it cannot work in this environment (a provider whose SDK is not
installed) through a classmethod ``unusable() -> str | None``; such a plugin shows as
``unusable`` with what to install, never as enabled.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Annotated, Any

import typer
from rich.markup import escape

from greenroom.cli.app import app, console, err_console

if TYPE_CHECKING:
    from greenroom.plugins.discovery import PluginRecord

UNUSABLE = "unusable"
"""The status of an installed plugin that cannot work here (a missing extra)."""

_STYLE = {"failed": "[red]failed[/]", "enabled": "[green]enabled[/]", UNUSABLE: "[yellow]unusable[/]"}


def unusable_reason(record: PluginRecord) -> str | None:
    """Why the plugin cannot work here, from its class's own ``unusable()``, or None."""
    ask = getattr(record.cls, "unusable", None)
    if not callable(ask):
        return None
    try:
        reason = ask()
    except Exception as exc:  # the question must not break the listing
        return f"{type(exc).__name__}: {exc}"
    return str(reason) if reason else None


def plugin_rows(records: list[PluginRecord]) -> list[dict[str, Any]]:
    """One row per plugin. Each healthy plugin is also started once with its default
    config, so a constructor that raises shows here rather than in the next run."""
    from greenroom.plugins.discovery import Status, select_enabled, start_failure

    selection = select_enabled(records)
    rows: list[dict[str, Any]] = []
    for r in records:
        failure = start_failure(r)
        status = Status.FAILED.value if failure is not None else selection.status[r.name].value
        unusable = unusable_reason(r) if failure is None else None
        if unusable and status in (Status.ENABLED.value, Status.OPT_IN.value):
            status = UNUSABLE
        rows.append(
            {
                "name": r.name,
                "distribution": r.distribution,
                "version": r.version,
                "entry_point": r.entry_point,
                "hooks": r.hooks(),
                "status": status,
                "error": failure.as_json() if failure is not None else None,
                "unusable": unusable,
            }
        )
    return rows


@app.command("plugins")
def plugins_cmd(as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False) -> None:
    """List installed plugins: name, distribution, version, hooks, status."""
    from rich.table import Table

    from greenroom.plugins.discovery import discover

    rows = plugin_rows(discover())
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="greenroom plugins")
    table.add_column("name", overflow="fold")
    table.add_column("distribution", overflow="fold")
    table.add_column("version")
    table.add_column("status")
    table.add_column("hooks", overflow="fold")
    for row in rows:
        status = _STYLE.get(row["status"], escape(row["status"]))
        hooks = ", ".join(h.removeprefix("greenroom_") for h in row["hooks"])
        table.add_row(escape(row["name"]), escape(row["distribution"]), escape(row["version"]), status, hooks)
    console.print(table)
    for row in rows:
        if row["unusable"] and not row["error"]:
            console.print(
                f"[yellow]plugin {escape(repr(row['name']))} is installed but unusable:[/] {escape(row['unusable'])}",
                highlight=False,
            )
        if row["error"]:
            kind, message = row["error"]["kind"], escape(row["error"]["message"])
            err_console.print(f"[red]plugin {escape(repr(row['name']))} failed ({kind}):[/] {message}", highlight=False)
