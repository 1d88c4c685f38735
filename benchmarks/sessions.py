"""Cost of a session, billed the way providers bill it, per strategy.

Replays a scripted session (default 30 steps, 5 discoveries) on each real catalog under
all-eager, inject with retention, dispatch and names-only dispatch, counts input tokens
per step as uncached, cache-write and cache-read, prices them (default list prices in
``greenroom_lab.costing``) and prints the ratio to all-eager from the same run.

    python benchmarks/sessions.py [--steps 30] [--discoveries 5] [--plot docs/img/session-cost.png]
        [--json out.json] [--figures]

Same as ``greenroom bench sessions --catalog FILE`` for one catalog. ``--figures`` writes
docs/figures/session_costs.json and rewrites the docs' tables that show it
(``benchmarks/figures.py``); tests/test_figures.py replays the sessions again and fails
when the code bills other numbers. Skips absent datasets.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console

from greenroom_lab.bench.replay import compare, load_tools
from greenroom_lab.bench.report import plot_cumulative, print_session_costs

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CATALOGS = [("github_mcp", None), ("metatool", None), ("seal_tools", 1000)]


def replays(steps: int = 30, discoveries: int = 5) -> dict[str, tuple[int, dict[str, Any]]]:
    """Every catalog present: its tool count and ``compare``'s results."""
    out = {}
    for name, limit in CATALOGS:
        path = DATASETS / name / "tools.jsonl"
        if path.exists():
            tools = load_tools(path, limit)
            out[name] = (len(tools), compare(tools, steps=steps, discoveries=discoveries))
    return out


def figures(everything: dict[str, tuple[int, dict[str, Any]]], steps: int, discoveries: int) -> dict[str, Any]:
    """What the docs show of ``replays``: no per-step series; costs to a millionth of a
    dollar and shares to four places, so that a figure reads the same on every machine."""

    def price(p: dict[str, Any]) -> dict[str, Any]:
        return {
            "cost": round(p["cost"], 6),
            "input_tokens": p["input_tokens"],
            "cache_read": p["cache_read"],
            "hit_rate": round(p["hit_rate"], 4),
        }

    catalogs = [
        {
            "name": name,
            "tools": tools,
            "strategies": {
                s: {
                    "steps": r["steps"],
                    "prefixes": r["prefixes"],
                    "prices": {k: price(p) for k, p in r["prices"].items()},
                }
                for s, r in results.items()
            },
        }
        for name, (tools, results) in everything.items()
    ]
    return {"settings": {"steps": steps, "discoveries": discoveries}, "catalogs": catalogs}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--discoveries", type=int, default=5)
    ap.add_argument("--plot", type=Path, help="PNG of cumulative cost per step on github_mcp")
    ap.add_argument("--json", type=Path, help="write all results as JSON")
    ap.add_argument("--figures", action="store_true", help="write docs/figures/session_costs.json and the docs' tables")
    args = ap.parse_args(argv)
    console = Console()
    everything = replays(args.steps, args.discoveries)
    for name, _ in CATALOGS:
        if name not in everything:
            console.print(f"[yellow]skipped {name}: not found under {DATASETS}[/]")
    for name, (count, results) in everything.items():
        print_session_costs(
            console, f"{name} ({count} tools), {args.steps} steps, {args.discoveries} discoveries", results
        )
        if args.plot and name == "github_mcp":
            args.plot.parent.mkdir(parents=True, exist_ok=True)
            plot_cumulative(
                results, args.plot, f"GitHub MCP (117 tools): {args.steps} steps, {args.discoveries} discoveries"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps({k: v for k, (_, v) in everything.items()}, indent=2))
    if args.figures:
        import figures as docs_figures  # beside this script

        path = docs_figures.save("session_costs", figures(everything, args.steps, args.discoveries))
        console.print(f"written {path}")
        docs_figures.main([])
    return 0


if __name__ == "__main__":
    sys.exit(main())
