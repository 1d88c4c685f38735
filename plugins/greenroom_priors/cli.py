"""``greenroom priors``: show, list, reset, export and import an agent's tool priors.

The store comes from ``--store URL``, else from the ``store`` key of
``[plugins.priors-persistence]`` in ``--config FILE``, else the default SQLite file.
Store schemes contributed by installed plugins work here too.
"""

from __future__ import annotations

import datetime as dt
import json
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from greenroom import make_plugin_host
from greenroom.kit import write_json_atomic
from greenroom_priors.ewma import DocumentError, check_document, utc_now
from greenroom_priors.keys import KEY, NAME, STORE_KEY
from greenroom_priors.store import ProfileStore, StoreError
from greenroom_priors.stores import (
    absolutize,
    builtin_factories,
    default_url,
    describe,
    merge_factories,
    open_store,
)

priors_app = typer.Typer(help="Show, reset, export and import learned tool priors.", no_args_is_help=True)

StoreOpt = Annotated[str | None, typer.Option("--store", help="Profile store URL (sqlite:///..., postgresql://...).")]
ConfigOpt = Annotated[Path | None, typer.Option("--config", help="Take the store from this config file.")]
# help texts are rich markup: brackets that are not markup are escaped
AgentArg = Annotated[str, typer.Argument(help=escape("Agent id ([agent] id in the config)."))]


def _fail(message: str, code: int = 2) -> None:
    # messages quote store URLs and agent ids: text, never markup
    Console(stderr=True, soft_wrap=True).print(f"[bold red]error:[/] {escape(message)}", highlight=False)
    raise typer.Exit(code)


def _factories() -> dict[str, Any]:
    """Built-in stores, overridden or extended by any installed store plugin."""
    answers: list[Any] = []
    try:
        answers = list(make_plugin_host().call_sync("greenroom_profile_stores"))
    except Exception:
        pass  # a broken plugin set must not lock a user out of the built-in stores
    return merge_factories([*answers, builtin_factories()])


def resolve_url(store: str | None, config: Path | None) -> str:
    if store and config:
        _fail("give --store or --config, not both")
    if store:
        return store
    if config is not None:
        # imported here: config loading is a few dozen ms that --help and --store never need
        from greenroom import ConfigError, load_runtime_config

        try:
            cfg, _ = load_runtime_config(config)
        except ConfigError as exc:
            _fail(str(exc))
            raise  # unreachable; for the type checker
        url = cfg.plugin_sections.get(NAME, {}).get("store")
        return absolutize(url, cfg.dir_of(STORE_KEY)) if url else default_url()
    return default_url()


@contextmanager
def _open(store: str | None, config: Path | None) -> Iterator[ProfileStore]:
    url = resolve_url(store, config)
    try:
        s = open_store(url, _factories())
    except StoreError as exc:
        _fail(str(exc))
        raise
    try:
        yield s
    except (StoreError, DocumentError) as exc:
        _fail(str(exc))
    finally:
        s.close()


def _load(s: ProfileStore, agent: str) -> dict[str, Any]:
    raw = s.read(agent, KEY)
    if raw is None:
        others = s.agents(KEY)
        hint = f" (agents with priors: {', '.join(others)})" if others else " (it holds no priors yet)"
        _fail(f"no priors for agent {agent!r} in {describe(s)}{hint}", code=1)
    return check_document(raw, f"{describe(s)}, agent {agent!r}")


def _when(stamp: str | None) -> str:
    if not stamp:
        return "-"
    try:
        t = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return stamp
    return t.astimezone().strftime("%Y-%m-%d %H:%M")


@priors_app.command("show")
def show(
    agent: AgentArg,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=0, help="Show only the N most likely tools (0: all).")] = 0,
    store: StoreOpt = None,
    config: ConfigOpt = None,
) -> None:
    """The agent's tools by learned probability: p, calls, last used."""
    with _open(store, config) as s:
        doc = _load(s, agent)
        rows = sorted(doc["tools"].items(), key=lambda kv: (-kv[1]["p"], kv[0]))
        if limit:
            rows = rows[:limit]
        if as_json:
            typer.echo(
                json.dumps(
                    {
                        "agent": agent,
                        "store": describe(s),
                        "sessions": doc["sessions"],
                        "updated": doc["updated"],
                        "tools": [{"tool": n, **e} for n, e in rows],
                    },
                    indent=2,
                )
            )
            return
        table = Table(
            title=escape(f"tool priors of {agent}: {doc['sessions']} session(s), {len(doc['tools'])} tool(s)"),
            caption=escape(describe(s)),
        )
        table.add_column("tool", overflow="fold")
        table.add_column("p", justify="right")
        table.add_column("calls", justify="right")
        table.add_column("last used")
        for name, entry in rows:
            table.add_row(escape(name), f"{entry['p']:.4f}", str(entry["calls"]), _when(entry["last_used"]))
        Console().print(table)


@priors_app.command("list")
def list_agents(store: StoreOpt = None, config: ConfigOpt = None) -> None:
    """The agents that have priors in the store."""
    with _open(store, config) as s:
        agents = s.agents(KEY)
        for agent in agents:
            typer.echo(agent)
        if not agents:
            # standard error: a script reading the list still gets an empty one
            hint = f"no agent has priors in {describe(s)} (--store URL or --config FILE reads another store)"
            typer.echo(hint, err=True)


@priors_app.command("reset")
def reset(
    agent: AgentArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
    store: StoreOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Forget everything the agent learned (its next run starts from the defaults)."""
    with _open(store, config) as s:
        if not yes:
            typer.confirm(f"Delete the tool priors of {agent!r} in {describe(s)}?", abort=True)
        if s.delete(agent, KEY):
            typer.echo(f"deleted the tool priors of {agent!r}")
        else:
            typer.echo(f"agent {agent!r} had no priors in {describe(s)}")


@priors_app.command("export")
def export(
    agent: AgentArg,
    file: Annotated[Path | None, typer.Argument(help="Output JSON file (default: standard output).")] = None,
    store: StoreOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Write the agent's priors document as JSON."""
    with _open(store, config) as s:
        doc = _load(s, agent)
    text = json.dumps({**doc, "agent": agent}, indent=2, sort_keys=True) + "\n"
    if file is None or str(file) == "-":
        sys.stdout.write(text)
    else:
        write_json_atomic(file, {**doc, "agent": agent})
        typer.echo(f"exported {len(doc['tools'])} tool(s), {doc['sessions']} session(s) to {file}")


@priors_app.command("import")
def import_(
    agent: AgentArg,
    file: Annotated[Path, typer.Argument(help="A JSON file written by 'priors export' ('-': standard input).")],
    store: StoreOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Replace the agent's priors with a document from priors export (of any agent)."""
    try:
        text = sys.stdin.read() if str(file) == "-" else file.read_text(encoding="utf-8")
    except OSError as exc:
        _fail(f"{file}: cannot read: {exc.strerror}")
        raise
    except UnicodeDecodeError as exc:
        name = "standard input" if str(file) == "-" else str(file)
        _fail(
            f"{name}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
            "priors import reads a JSON file written by 'priors export'"
        )
        raise
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        _fail(f"{file}: not valid JSON ({exc})")
        raise
    try:
        doc = check_document(data, str(file))
    except DocumentError as exc:
        _fail(str(exc))
        raise
    doc["updated"] = doc["updated"] or utc_now()
    with _open(store, config) as s:
        s.update(agent, KEY, lambda _current: doc)
        typer.echo(
            f"imported {len(doc['tools'])} tool(s), {doc['sessions']} session(s) for {agent!r} into {describe(s)}"
        )
