"""``greenroom rank``: ``eval`` measures rankers on a catalog with known answers; ``index``
builds a catalog's indexes ahead of its first search (``ahead``)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from greenroom.kit import fail
from greenroom_ranking.evaluate import (
    BASELINE,
    DEFAULT,
    EvalResult,
    evaluate,
    load_queries,
    load_tools,
    missing_gold,
    relative,
)

rank_app = typer.Typer(
    help="Tool-search ranking: build a catalog's indexes ahead; evaluate rankers on catalogs with known answers.",
    no_args_is_help=True,
)

DEFAULT_RANKERS = [BASELINE, "keyword", "bm25", DEFAULT]


def _table(title: str, columns: list[str]) -> Table:
    table = Table(title=title or None, title_justify="left")
    for i, col in enumerate(columns):
        if i == 0:  # ranker names wrap rather than being cut
            table.add_column(col, overflow="fold", ratio=1)
        else:  # numbers are never cut: they keep their width
            table.add_column(col, justify="right", no_wrap=True, min_width=len(col))
    return table


def results_tables(results: list[EvalResult], title: str = "") -> list[Table]:
    """Rankers side by side in two narrow tables (quality, then cost), each readable at
    80 columns: Recall@5 relative to the baseline when it was run."""
    rel = relative(results)
    quality = _table(title, ["ranker (form)", "R@5", "R@10", "nDCG@10", "MRR", "all@5"])
    cost = _table("", ["ranker (form)", f"R@5 vs {BASELINE}", "build s", "p50 ms", "p95 ms"])
    for r in results:
        label = f"{r.ranker} ({r.form})"
        quality.add_row(
            Text(label),
            f"{r.recall_at_5:.3f}",
            f"{r.recall_at_10:.3f}",
            f"{r.ndcg_at_10:.3f}",
            f"{r.mrr:.3f}",
            f"{r.all_gold_at_5:.3f}",
        )
        ratios = rel.get((r.ranker, r.form))  # None: the baseline was not run
        ratio = None if ratios is None else ratios["recall_at_5"]
        cost.add_row(
            Text(label),
            "" if ratios is None else "n/a" if ratio is None else f"{ratio:.2f}x",  # n/a: the baseline found none
            f"{r.build_seconds:.2f}",
            f"{r.p50_ms:.2f}",
            f"{r.p95_ms:.2f}",
        )
    return [quality, cost]


@rank_app.command("eval")
def eval_cmd(
    tools: Annotated[
        Path, typer.Option("--tools", help="Catalog: tools.jsonl (name, description, parameters, group).")
    ],
    queries: Annotated[Path, typer.Option("--queries", help="queries.jsonl (query, gold).")],
    ranker: Annotated[
        list[str] | None,
        typer.Option(
            "--ranker",
            help=(
                "Ranker to measure (repeat): default, hybrid, keyword, bm25, bm25-plain, routing, embedding, "
                "a+b, any of them with -v1 (as ranked before 2026-11: default-v1, hybrid-v1), or an installed "
                "ranker plugin's name."
            ),
        ),
    ] = None,
    form: Annotated[
        str, typer.Option("--form", help="Query form: full (the request), keywords (its first content words), both.")
    ] = "both",
    limit: Annotated[
        int | None, typer.Option("--limit", min=1, help="Evaluate an evenly spaced sample of N queries.")
    ] = None,
    as_json: Annotated[bool, typer.Option("--json", help="Machine-readable output.")] = False,
) -> None:
    """Recall@5, Recall@10, nDCG@10, MRR, all-gold@5, build time and latency per ranker."""
    if form not in ("full", "keywords", "both"):
        raise typer.BadParameter("use full, keywords or both", param_hint="--form")
    forms: list[Any] = ["full", "keywords"] if form == "both" else [form]
    names = ranker or DEFAULT_RANKERS
    try:
        catalog = load_tools(tools)
        qs = load_queries(queries, limit)
    except (OSError, ValueError) as exc:
        fail(str(exc))
    unfindable = missing_gold(qs, catalog)
    if unfindable:
        first, absent = unfindable[0]
        Console(stderr=True).print(
            f"[yellow]warning:[/] {len(unfindable)} of {len(qs)} queries name gold tools that are not in "
            f"{escape(str(tools))} (the first: {escape(first.where)}, {escape(', '.join(map(repr, absent)))}); "
            "no ranker can find them, so every figure is lower by as much",
            highlight=False,
            emoji=False,
        )
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    results: list[EvalResult] = []
    err = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=as_json,
        transient=True,
    ) as progress:
        for f in forms:
            for name in names:
                task = progress.add_task(f"{name} ({f})", total=len(qs))

                def advance(n: int, task: Any = task) -> None:
                    progress.advance(task, n)

                try:
                    results.append(evaluate(catalog, qs, name, form=f, progress=advance))
                except (ValueError, RuntimeError, ImportError) as exc:
                    err.print(f"[bold red]error:[/] {escape(str(exc))}", highlight=False, overflow="ignore", crop=False)
                    raise typer.Exit(2) from None
    if as_json:
        rel = relative(results)
        payload = {
            "tools": str(tools),
            "queries": str(queries),
            "tool_count": len(catalog),
            "query_count": len(qs),
            "queries_with_missing_gold": len(unfindable),
            "baseline": BASELINE,
            "results": [{**r.to_json(), "vs_baseline": rel.get((r.ranker, r.form))} for r in results],
        }
        typer.echo(json.dumps(payload, indent=2, sort_keys=True))
        return
    out = Console()
    title = f"{tools.parent.name or tools.name}: {len(catalog)} tools, {len(qs)} queries"
    for table in results_tables(results, title):
        out.print(table)


@rank_app.command("index")
def index_cmd(
    path: Annotated[Path, typer.Argument(help="A config (.toml), or a catalog (.jsonl, .json).", show_default=False)],
) -> None:
    """Build the search indexes a run reads, ahead of its first search.

    A config: the tools a run of it may use (its catalogs, groups and MCP
    servers, listed as greenroom run lists them), with its search-ranking
    settings. A catalog: its tools, with the default settings, as a run of a
    config listing that one catalog reads them. Written to the index store in
    greenroom's state dir (GREENROOM_HOME), where a run's first search finds
    them. Exits 2 when the path or config is wrong, 1 when nothing a run would
    read could be indexed.
    """
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    from greenroom_ranking.cli.ahead import NothingIndexed, SourceError, index_ahead

    err = Console(stderr=True)
    with Progress(
        SpinnerColumn(),
        TextColumn("{task.description}", markup=False),  # file names are not markup
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=err,
        disable=not err.is_terminal,
        transient=True,
    ) as progress:
        task = progress.add_task(str(path), total=None)

        def step(what: str, done: int, total: int) -> None:
            progress.update(task, description=what, completed=done, total=total)

        try:
            indexed = index_ahead(path, step)
        except (SourceError, NothingIndexed) as exc:
            progress.stop()
            fail(str(exc), 2 if isinstance(exc, SourceError) else 1)
    typer.echo(indexed.summary())
