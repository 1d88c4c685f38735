"""Cost of a session, billed the way providers bill it, per strategy.

Replays a scripted session (default 30 steps, 5 discoveries) on each real catalog under
all-eager, inject with retention, dispatch and names-only dispatch, counts input tokens
per step as uncached, cache-write and cache-read, prices them (default list prices in
``greenroom_deferred.bench.costing``) and prints the ratio to all-eager from the same run.

    python benchmarks/sessions.py [--steps 30] [--discoveries 5] [--plot docs/img/session-cost.png]

Same as ``greenroom bench sessions --catalog FILE`` for one catalog. Skips absent datasets.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from rich.console import Console

from greenroom_deferred.bench.replay import compare, load_tools
from greenroom_deferred.bench.report import plot_cumulative, print_session_costs

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
CATALOGS = [("github_mcp", None), ("metatool", None), ("seal_tools", 1000)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--discoveries", type=int, default=5)
    ap.add_argument("--plot", type=Path, help="PNG of cumulative cost per step on github_mcp")
    ap.add_argument("--json", type=Path, help="write all results as JSON")
    args = ap.parse_args(argv)
    console = Console()
    everything = {}
    for name, limit in CATALOGS:
        path = DATASETS / name / "tools.jsonl"
        if not path.exists():
            console.print(f"[yellow]skipped {name}: {path} not found[/]")
            continue
        tools = load_tools(path, limit)
        results = compare(tools, steps=args.steps, discoveries=args.discoveries)
        everything[name] = results
        print_session_costs(
            console, f"{name} ({len(tools)} tools), {args.steps} steps, {args.discoveries} discoveries", results
        )
        if args.plot and name == "github_mcp":
            args.plot.parent.mkdir(parents=True, exist_ok=True)
            plot_cumulative(
                results, args.plot, f"GitHub MCP (117 tools): {args.steps} steps, {args.discoveries} discoveries"
            )
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(everything, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
