"""What code mode is worth in tasks: ``greenroom eval``'s ``code`` arm against ``dispatch``
with the simulated agent, on the shared datasets' tasks that need two or more tools.

For each dataset with such tasks (seal_tools: read in place from ``../shared/datasets``),
the tasks with at least two gold tools are written to a temporary task file, and both arms
run the same sessions (drawn from a pool with Zipf-like repetition, seed 7): ``dispatch``
(ToolSearch, the dispatcher, one call per tool) and ``code`` (the same, with code mode on:
the agent writes one ``run_code`` script for the calls of a step, ToolSearch answers with
signatures). Printed per arm: success, steps, input tokens per task and the ratio of
``code`` to ``dispatch``, from one run (the budget: at most 0.5x at the same success)::

    python benchmarks/eval_code.py [--sessions 100] [--pool 40] [--json out.json]

Datasets absent: says so, exits 0.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path
from typing import Any

from greenroom_lab.eval.arms import parse_arms
from greenroom_lab.eval.plan import Target, evaluate
from greenroom_lab.eval.tasks import Mix

DATASETS = Path(__file__).resolve().parents[2] / "shared" / "datasets"
SOURCES = ("seal_tools", "metatool")


def multi_tool_tasks(folder: Path, out: Path) -> int:
    """The dataset's tasks with two or more gold tools, written to ``out``; how many."""
    kept = [
        line
        for line in (folder / "queries.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip() and len(json.loads(line)["gold"]) >= 2
    ]
    out.write_text("\n".join(kept) + "\n", encoding="utf-8")
    return len(kept)


def measure(name: str, sessions: int, pool: int) -> dict[str, Any] | None:
    folder = DATASETS / name
    if not (folder / "queries.jsonl").exists():
        print(f"{name}: not found under {DATASETS}, skipped")
        return None
    work = Path(tempfile.mkdtemp(prefix=f"eval-code-{name}-"))
    tasks = work / "tasks.jsonl"
    if multi_tool_tasks(folder, tasks) == 0:
        print(f"{name}: no task needs two or more tools, skipped")
        return None
    mix = Mix(sessions=sessions, pool=pool, zipf=1.1, seed=7)
    return evaluate(Target(tools=folder / "tools.jsonl"), tasks, parse_arms("dispatch,code"), mix, work / "out")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=100)
    parser.add_argument("--pool", type=int, default=40)
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    figures: dict[str, Any] = {}
    for name in SOURCES:
        report = measure(name, args.sessions, args.pool)
        if report is None:
            continue
        arms = {a["name"]: a for a in report["arms"]}
        plain, code = arms["dispatch"], arms["code"]
        ratio = code["input_tokens_per_session"] / plain["input_tokens_per_session"]
        print(f"\n{name}: {plain['sessions']} sessions of tasks needing two or more tools, simulated agent")
        print(f"{'arm':10} {'success':>8} {'steps':>6} {'input tokens/task':>18}")
        for arm in (plain, code):
            print(
                f"{arm['name']:10} {arm['success']:8.3f} {arm['steps_per_session']:6.2f} "
                f"{arm['input_tokens_per_session']:18.0f}"
            )
        print(f"code / dispatch input tokens per task: {ratio:.2f}x (budget 0.5x at the same success)")
        figures[name] = {
            "sessions": plain["sessions"],
            "dispatch": {k: plain[k] for k in ("success", "steps_per_session", "input_tokens_per_session")},
            "code": {k: code[k] for k in ("success", "steps_per_session", "input_tokens_per_session")},
            "input_ratio": round(ratio, 3),
        }
    if args.json and figures:
        Path(args.json).write_text(json.dumps(figures, indent=2) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
