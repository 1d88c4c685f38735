"""Tokens sent: all-eager vs dispatch (two listings) vs inject, on real catalogs.

Every number is an exact o200k count of what the runtime really sent (``RequestSent``
events), for the first step and for a whole scripted session in which the model makes a
handful of discoveries and calls what it found. Ratios are against all-eager, measured in
the same run.

    python benchmarks/tokens.py [--steps 20] [--discoveries 5] [--json out.json] [--figures]

``--figures`` writes them to docs/figures/tokens.json and rewrites the docs' tables that
show them (``benchmarks/figures.py``); tests/test_figures.py counts them again and fails
when the code sends other numbers. Needs ../shared/datasets (github_mcp, seal_tools);
skips a catalog that is absent.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from greenroom import events as ev
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import PolicyModel
from greenroom.run.runtime import Runtime
from greenroom.tools.catalog import load_catalog
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_lab.bench.replay import session_policy

ROOT = Path(__file__).resolve().parents[1]
DATASETS = ROOT.parent / "shared" / "datasets"

STRATEGIES: dict[str, dict[str, Any]] = {
    "all-eager": {"enabled": False},
    "dispatch": {"strategy": "dispatch", "listing": "descriptions"},
    "dispatch-names": {"strategy": "dispatch", "listing": "names"},
    "inject": {"strategy": "inject", "listing": "descriptions"},
}


async def measure(
    tools: list[Any], strategy: dict[str, Any], targets: list[str], steps: int, discoveries: int
) -> dict[str, Any]:
    plugin = DeferredToolsPlugin(DeferredConfig(**strategy))
    rt = Runtime(
        model=PolicyModel(session_policy(targets, steps, discoveries)),
        tools=tools,
        host=make_plugin_host(records=[], extra=[plugin]),
    )
    requests: list[ev.RequestSent] = []
    rt.events.subscribe(lambda e: requests.append(e) if isinstance(e, ev.RequestSent) else None)
    from greenroom.config import AgentConfig

    rt.agent = AgentConfig(max_steps=steps + 1)
    await rt.session().run("work through the task")
    first = requests[0]
    return {
        "first_tools": first.tools_tokens,
        "first_system": first.system_tokens,
        "first_definitions": first.tools_tokens + first.system_tokens,
        "session_total": sum(r.total_tokens for r in requests),
        "session_prefix": sum(r.tools_tokens + r.system_tokens for r in requests),
        "prefix_hashes": len({r.prefix_hash for r in requests}),
        "steps": len(requests),
    }


def catalogs(sizes: list[int]) -> list[tuple[str, list[Any]]]:
    out = []
    gh = DATASETS / "github_mcp" / "tools.jsonl"
    if gh.exists():
        out.append(("github_mcp", load_catalog(gh)))
    seal = DATASETS / "seal_tools" / "tools.jsonl"
    if seal.exists():
        everything = load_catalog(seal)
        out.extend(("seal_tools", everything[:n]) for n in sizes)
    return out


def figures(steps: int = 20, discoveries: int = 5, sizes: Sequence[int] = (100, 1000, 4076)) -> dict[str, Any]:
    """Every catalog under every strategy: ``{"settings", "catalogs": [{"name", "tools",
    "strategies": {strategy: measure()}}]}`` (exact counts: the same on every run)."""
    out: list[dict[str, Any]] = []
    for name, tools in catalogs(list(sizes)):
        targets = random.Random(7).sample([t.descriptor.name for t in tools], discoveries)
        per = {s: anyio.run(measure, tools, options, targets, steps, discoveries) for s, options in STRATEGIES.items()}
        out.append({"name": name, "tools": len(tools), "strategies": per})
    return {"settings": {"steps": steps, "discoveries": discoveries, "sizes": list(sizes)}, "catalogs": out}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--discoveries", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 4076])
    ap.add_argument("--json", type=Path, help="also write the results as JSON")
    ap.add_argument("--figures", action="store_true", help="write docs/figures/tokens.json and the docs' tables")
    args = ap.parse_args(argv)
    console = Console()
    results = figures(args.steps, args.discoveries, args.sizes)
    if not results["catalogs"]:
        console.print(f"[yellow]skipped: no datasets under {DATASETS}[/]")
        return 0
    table = Table(
        title=f"tokens sent (exact o200k): first step, and a {args.steps}-step session with "
        f"{args.discoveries} discoveries; ratio to all-eager"
    )
    for col in ("catalog", "strategy", "step-1 tool definitions", "ratio", "session total", "ratio", "prefix hashes"):
        table.add_column(col, justify="left" if col in ("catalog", "strategy") else "right")
    for cat in results["catalogs"]:
        base = cat["strategies"]["all-eager"]
        for name, r in cat["strategies"].items():
            table.add_row(
                f"{cat['name']} ({cat['tools']})",
                name,
                f"{r['first_definitions']:,}",
                f"{r['first_definitions'] / base['first_definitions']:.3f}",
                f"{r['session_total']:,}",
                f"{r['session_total'] / base['session_total']:.3f}",
                str(r["prefix_hashes"]),
            )
    console.print(table)
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(results, indent=2))
    if args.figures:
        import figures as docs_figures  # beside this script

        console.print(f"written {docs_figures.save('tokens', results)}")
        docs_figures.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
