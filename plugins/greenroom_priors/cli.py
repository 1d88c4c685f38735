"""``greenroom priors``: show, list, reset, export and import an agent's tool priors, and
sweep the journal of calls and the spool.

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
from greenroom.kit import MAX_ARGUMENT_DEPTH, fail, text_nesting_exceeds, write_json_atomic
from greenroom_priors.config import PriorsConfig
from greenroom_priors.ewma import DocumentError, check_document, empty_document, utc_now
from greenroom_priors.journal import SweepReport, fold_runs, has_journal
from greenroom_priors.keys import KEY, NAME, STORE_KEY
from greenroom_priors.spool import Spool
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
AgentArg = Annotated[str, typer.Argument(help="Agent id ([agent] id in the config).")]


def _factories() -> dict[str, Any]:
    """Built-in stores, overridden or extended by any installed store plugin."""
    answers: list[Any] = []
    try:
        answers = list(make_plugin_host().call_sync("greenroom_profile_stores"))
    except Exception:
        pass  # a broken plugin set must not lock a user out of the built-in stores
    return merge_factories([*answers, builtin_factories()])


def resolve_url(store: str | None, config: Path | None) -> str:
    return _resolve(store, config)[0]


def _resolve(store: str | None, config: Path | None) -> tuple[str, dict[str, Any]]:
    """The store URL, and the plugin's section of ``config`` (empty without one)."""
    if store and config:
        fail("give --store or --config, not both")
    if store:
        return store, {}
    if config is not None:
        # imported here: config loading is a few dozen ms that --help and --store never need
        from greenroom import ConfigError, load_runtime_config

        try:
            cfg, _ = load_runtime_config(config)
        except ConfigError as exc:
            fail(str(exc))
            raise  # unreachable; for the type checker
        section = dict(cfg.plugin_sections.get(NAME, {}))
        url = section.get("store")
        return (absolutize(url, cfg.dir_of(STORE_KEY)) if url else default_url()), section
    return default_url(), {}


@contextmanager
def _open(store: str | None, config: Path | None, url: str | None = None) -> Iterator[ProfileStore]:
    url = url or resolve_url(store, config)
    try:
        s = open_store(url, _factories())
    except StoreError as exc:
        fail(str(exc))
        raise
    try:
        yield s
    except (StoreError, DocumentError) as exc:
        fail(str(exc))
    finally:
        s.close()


def _load(s: ProfileStore, agent: str) -> dict[str, Any]:
    return _load_counted(s, agent)[0]


def _load_counted(s: ProfileStore, agent: str, spooled: bool = False) -> tuple[dict[str, Any], dict[str, int] | None]:
    """The agent's document and, from a store with a journal, the calls still in it
    (read at one instant); None without a journal. ``spooled``: the agent has calls in
    the spool (no document yet is no error then)."""
    unfolded: dict[str, int] | None = None
    if has_journal(s):
        raw, unfolded = s.journal_counts(agent, KEY)
    else:
        raw = s.read(agent, KEY)
    if raw is None and not unfolded and not spooled:
        others = s.agents(KEY)
        hint = f" (agents with priors: {', '.join(others)})" if others else " (it holds no priors yet)"
        fail(f"no priors for agent {agent!r} in {describe(s)}{hint}", code=1)
    doc = check_document(raw, f"{describe(s)}, agent {agent!r}") if raw is not None else empty_document()
    return doc, unfolded


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
    """The agent's tools by learned probability: p, calls, last used (and, from a store
    with a journal of calls, the calls still in it and the exact total; and the calls that
    wait in the spool for the store, which 'priors sweep' saves)."""
    url = resolve_url(store, config)
    spool = Spool(url)
    spooled = spool.calls_of(agent)
    if spooled:  # said first: also when the store cannot be read now
        where = f"wait in the spool {spool.folder} (greenroom priors sweep saves them)"
        typer.echo(f"{spooled} call(s) of {agent} {where}", err=True)
    with _open(None, None, url) as s:
        doc, unfolded = _load_counted(s, agent, bool(spooled))
        tools: dict[str, Any] = dict(doc["tools"])
        for name in unfolded or {}:
            tools.setdefault(name, {"p": None, "calls": 0, "last_used": None})
        rows = sorted(tools.items(), key=lambda kv: (-(kv[1]["p"] or 0.0), kv[0]))
        if limit:
            rows = rows[:limit]
        if as_json:
            entries = [{"tool": n, **e} for n, e in rows]
            if unfolded is not None:
                for entry in entries:
                    entry["journal"] = unfolded.get(entry["tool"], 0)
                    entry["total"] = entry["calls"] + entry["journal"]
            summary = {"agent": agent, "store": describe(s), "sessions": doc["sessions"], "updated": doc["updated"]}
            typer.echo(json.dumps({**summary, "spooled": spooled, "tools": entries}, indent=2))
            return
        table = Table(
            title=escape(f"tool priors of {agent}: {doc['sessions']} session(s), {len(doc['tools'])} tool(s)"),
            caption=escape(describe(s)),
        )
        table.add_column("tool", overflow="fold")
        table.add_column("p", justify="right")
        table.add_column("calls", justify="right")
        if unfolded is not None:
            table.add_column("in journal", justify="right")
            table.add_column("total", justify="right")
        table.add_column("last used")
        for name, entry in rows:
            p = "-" if entry["p"] is None else f"{entry['p']:.4f}"
            counts = [str(entry["calls"])]
            if unfolded is not None:
                counts += [str(unfolded.get(name, 0)), str(entry["calls"] + unfolded.get(name, 0))]
            table.add_row(escape(name), p, *counts, _when(entry["last_used"]))
        Console().print(table)


@priors_app.command("report")
def report(
    agent: AgentArg,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Tools per list (most and least used).")] = 10,
    store: StoreOpt = None,
    config: ConfigOpt = None,
) -> None:
    """What the agent's priors say: the tools used most and least, the tools never used
    (with --config), the searches that found nothing it then used, and suggested
    never_defer, rules and [tools.policy] denials, each with its evidence."""
    # imported here: the report builds a runtime, which the other commands never need
    import anyio

    from greenroom_priors import report as reports

    catalog = None
    if config is not None and store is None:
        try:
            catalog = anyio.run(reports.catalog_of, config)
        except Exception as exc:  # a config that cannot build: say so, as config check would
            fail(f"{config}: cannot build the agent's runtime to read its tools: {exc}")
    with _open(store, config) as s:
        doc = _load(s, agent)
        found = reports.build(doc, agent=agent, store=describe(s), catalog=catalog, limit=limit)
    if as_json:
        typer.echo(json.dumps(found, indent=2))
        return
    reports.render(found, Console())


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
        fail(f"{file}: cannot read: {exc.strerror}")
        raise
    except UnicodeDecodeError as exc:
        name = "standard input" if str(file) == "-" else str(file)
        fail(
            f"{name}: not UTF-8 text (byte {exc.object[exc.start]:#04x} at offset {exc.start}); "
            "priors import reads a JSON file written by 'priors export'"
        )
        raise
    # json recurses once per level: a document nested thousands deep would end in a RecursionError
    if text_nesting_exceeds(text):
        fail(f"{file}: nested more than {MAX_ARGUMENT_DEPTH} levels deep; not a document written by 'priors export'")
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        fail(f"{file}: not valid JSON ({exc})")
        raise
    try:
        doc = check_document(data, str(file))
    except DocumentError as exc:
        fail(str(exc))
        raise
    doc["updated"] = doc["updated"] or utc_now()
    with _open(store, config) as s:
        s.update(agent, KEY, lambda _current: doc)
        typer.echo(
            f"imported {len(doc['tools'])} tool(s), {doc['sessions']} session(s) for {agent!r} into {describe(s)}"
        )


@priors_app.command("sweep", context_settings={"allow_extra_args": True})  # the old CONFIG argument
def sweep(
    ctx: typer.Context,
    store: StoreOpt = None,
    config: Annotated[
        Path | None, typer.Option("--config", help="Sweep the store of this config file, with its settings.")
    ] = None,
    stale: Annotated[
        float | None,
        typer.Option("--stale", min=0, help="Fold runs not written for this many seconds (default: journal_stale)."),
    ] = None,
) -> None:
    """Save the runs that wait in the spool for the store, and fold the journal of runs
    whose process died (not written for journal_stale seconds)."""
    if ctx.args:  # the config as an argument, as before --config: still taken, for a while
        if config is not None or len(ctx.args) > 1:
            fail(f"unexpected argument(s) {' '.join(ctx.args)!r}: give the config once, with --config")
        Console(stderr=True, soft_wrap=True).print(
            "[yellow]warning:[/] 'greenroom priors sweep CONFIG' is deprecated: use "
            "'greenroom priors sweep --config CONFIG', as the other priors commands take it",
            highlight=False,
        )
        config = Path(ctx.args[0])
    url, section = _resolve(store, config)
    settings = PriorsConfig(**{k: v for k, v in section.items() if k in {"min_smoothing", "journal_stale"}})
    after = settings.journal_stale if stale is None else stale
    with _open(None, None, url) as s:
        spool = Spool(url)
        runs, calls, _ = spool.replay(s)
        saved = f"saved {runs} spooled run(s), {calls} call(s), from {spool.folder}" if runs else ""
        if saved:
            typer.echo(saved)
        if not has_journal(s):
            if not saved:
                fail(f"{describe(s)} keeps no journal of calls: nothing to sweep (and nothing waits in its spool)")
            return
        now, where = utc_now(), describe(s)

        def change(current: Any, runs: Any) -> Any:
            agent = runs[0].agent_id
            return fold_runs(current, runs, now=now, floor=settings.min_smoothing, where=f"{where}, agent {agent!r}")

        total = SweepReport()
        while True:  # a sweep folds a batch of runs at most: go on until one finds none
            done = s.sweep(KEY, after, change)
            total += done
            if done.runs == 0:  # (a broken document's runs are found again, and refused again)
                break
        typer.echo(
            f"swept {where}: folded {total.runs} run(s) of {total.agents} agent(s), {total.calls} call(s); "
            f"forgot {total.forgotten} folded row(s)"
            + (f"; left {done.refused} agent(s) whose priors document is broken" if done.refused else "")
        )
