"""The ``greenroom`` command line: plugins, config, inspect, run, demo.

Plugins add subcommands through ``greenroom_cli_commands``. Plugin discovery happens when
the CLI starts, but a plugin that fails to import or to add its commands is reported on
the ``plugins`` listing and skipped; ``--help`` and every other command keep working.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Annotated, Any

import anyio
import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from greenroom import events as ev
from greenroom.config import ConfigError, merged_document
from greenroom.models import ModelError
from greenroom.plugins import PluginHookError, PluginHost, PluginRecord, discover, make_plugin_host

console = Console()
err_console = Console(stderr=True)

app = typer.Typer(
    name="greenroom",
    help="Deferred tool schemas, tool search and a plugin-based agent runtime.",
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    add_completion=False,
)
config_app = typer.Typer(help="Check, show and document configuration files.", no_args_is_help=True)
app.add_typer(config_app, name="config")


def fail(message: str, code: int = 2) -> None:
    # messages quote user text and install hints like greenroom[openai]: never markup
    err_console.print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


# ----------------------------------------------------------------------------- plugins


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


# ----------------------------------------------------------------------------- config


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

    records = [r for r in discover() if r.cls is not None]
    if plugin is None:
        schema = core_schema()
        schema["properties"]["plugins"]["properties"].update(
            {r.name: r.cls.config_schema() for r in records if r.cls is not None}
        )
    else:
        match = [r for r in records if r.name == plugin]
        if not match or match[0].cls is None:
            fail(f"unknown plugin {plugin!r} (installed: {', '.join(r.name for r in records)})")
        schema = match[0].cls.config_schema()  # type: ignore[union-attr]
    typer.echo(json.dumps(schema, indent=2))


@config_app.command("reference")
def config_reference() -> None:
    """Print the configuration reference (Markdown) generated from every schema."""
    from greenroom.reference import render_reference

    records = [r for r in discover() if r.distribution == "greenroom"]  # first-party only: stable
    typer.echo(render_reference(records), nl=False)


# ----------------------------------------------------------------------------- inspect / run


def _build(path: Path, **kw: Any) -> Any:
    from greenroom.compose import build_runtime

    try:
        return build_runtime(path, **kw)
    except ConfigError as exc:
        fail(str(exc))
    except Exception as exc:  # a plugin failing to start must not print a traceback
        fail(f"{type(exc).__name__}: {exc}")


@app.command("inspect")
def inspect_cmd(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    as_json: Annotated[bool, typer.Option("--json")] = False,
) -> None:
    """Show what the model would see on the first step: each tool eager or deferred."""
    from greenroom.report import inspect_runtime, print_inspection

    rt = _build(path)
    report = anyio.run(inspect_runtime, rt)
    if as_json:
        typer.echo(json.dumps(report, indent=2))
    else:
        print_inspection(console, report)


@app.command("run")
def run_cmd(
    path: Annotated[Path, typer.Argument(help="Config file (TOML).")],
    user_input: Annotated[str, typer.Argument(metavar="INPUT", help="The user's message.")],
    trace: Annotated[Path | None, typer.Option("--trace", help="Write a JSONL trace of events.")] = None,
    session: Annotated[Path | None, typer.Option("--session", help="Session file to resume and save.")] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Print only the final answer.")] = False,
) -> None:
    """Run the agent on one input (resuming and saving --session if given)."""
    from greenroom.report import LiveView
    from greenroom.runtime import SessionError

    bus = ev.EventBus()
    writer = ev.TraceWriter(trace) if trace else None
    if writer:
        bus.subscribe(writer)
    if not quiet:
        bus.subscribe(LiveView(console))
    rt = _build(path, events=bus)

    async def go() -> Any:
        try:
            sess = rt.load_session(session) if session and session.exists() else rt.session()
            outcome = await sess.run(user_input)
            if session:
                sess.save(session)
            return outcome
        finally:
            await rt.aclose()

    try:
        outcome = anyio.run(go)
    except SessionError as exc:
        fail(str(exc))
    except PluginHookError as exc:
        fail(str(exc), 1)
    except ModelError as exc:
        fail(f"the model failed: {exc}", 1)
    except Exception as exc:
        fail(f"{type(exc).__name__}: {exc}", 1)
    finally:
        if writer:
            writer.close()
    if quiet:
        typer.echo(outcome.text)
    if outcome.stop_reason != "final":
        err_console.print(f"[yellow]run stopped: {outcome.stop_reason}[/]")
        raise typer.Exit(1)


@app.command("demo")
def demo_cmd(
    strategy: Annotated[str, typer.Option(help="dispatch (default) or inject.")] = "dispatch",
    fresh: Annotated[bool, typer.Option("--fresh", help="Forget what earlier demo runs learned.")] = False,
    trace: Annotated[Path | None, typer.Option("--trace", help="Write a JSONL trace of events.")] = None,
) -> None:
    """Offline demo: an agent with 191 tools finds and uses the few it needs."""
    from greenroom.demo import run_demo

    try:
        run_demo(console, strategy=strategy, fresh=fresh, trace=trace)
    except ConfigError as exc:
        fail(str(exc))


bench_app = typer.Typer(help="Reproducible measurements.", no_args_is_help=True)
app.add_typer(bench_app, name="bench")


@bench_app.command("sessions")
def bench_sessions(
    catalog: Annotated[Path, typer.Option(help="Tool catalog (JSON/JSONL).")],
    steps: Annotated[int, typer.Option(help="Model calls per session.")] = 30,
    discoveries: Annotated[int, typer.Option(help="Tools discovered over the session.")] = 5,
    limit: Annotated[int | None, typer.Option(help="Use only the first N tools.")] = None,
    as_json: Annotated[bool, typer.Option("--json")] = False,
    plot: Annotated[Path | None, typer.Option(help="Write a PNG of cumulative cost per step.")] = None,
) -> None:
    """Price one replayed session under each strategy, as providers bill it."""
    from greenroom.bench import compare, load_tools
    from greenroom.report import plot_cumulative, print_session_costs

    try:
        tools = load_tools(catalog, limit)
    except Exception as exc:
        fail(str(exc))
    results = compare(tools, steps=steps, discoveries=discoveries)
    if as_json:
        typer.echo(json.dumps(results, indent=2))
    else:
        print_session_costs(console, f"{catalog.name} ({len(tools)} tools)", results)
    if plot:
        plot_cumulative(results, plot, title=f"{catalog.name}: {steps} steps, {discoveries} discoveries")


# ----------------------------------------------------------------------------- plugin commands


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


if __name__ == "__main__":
    main()
