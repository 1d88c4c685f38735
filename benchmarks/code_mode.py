"""Code mode's own cost: what ``run_code`` adds to the tool calls its script makes.

One runtime with the code-mode plugin and a no-op tool ``echo``; a scripted model plays
turns of three kinds, interleaved, N of each, in one run:

- **bare**: the model calls ``echo`` itself (the duration of that call, as the runtime
  timed it: validation, gates, the tool, events);
- **script, no call**: ``run_code`` with ``return 1`` (the sandbox alone: a Deno process
  started, the script run, its answer read, the process killed and its folder removed);
- **script, one call**: ``run_code`` calling ``echo`` once; its own cost is its duration
  minus that of the call it made.

Printed: p50 and p90 in milliseconds, and the sandbox's own cost as a multiple of a bare
call (the budget: p50 at most 100 ms beyond the tools a script calls)::

    python benchmarks/code_mode.py [--calls 40] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
from typing import Any

import anyio

from greenroom import events as ev
from greenroom import tool
from greenroom.config import AgentConfig
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime
from greenroom_code import CodeConfig, CodeModePlugin


@tool
def echo(text: str) -> str:
    """Echo text."""
    return text


KINDS = {
    "bare": lambda: {"name": "echo", "arguments": {"text": "hi"}},
    "script, no call": lambda: {"name": "run_code", "arguments": {"code": "return 1"}},
    "script, one call": lambda: {"name": "run_code", "arguments": {"code": "return await tools.echo({text: 'hi'})"}},
}


async def measure(calls: int) -> dict[str, list[float]]:
    turns: list[dict[str, Any]] = []
    order: list[str] = []
    for _ in range(calls):
        for kind, make in KINDS.items():
            turns.append({"tool_calls": [make()]})
            order.append(kind)
    turns.append({"text": "done"})
    rt = Runtime(
        model=ScriptedModel(turns),
        tools=[echo],
        host=make_plugin_host(records=[], extra=[CodeModePlugin(CodeConfig())]),
        agent=AgentConfig(max_steps=len(turns) + 1),
    )
    results: list[ev.ToolExecuted] = []
    rt.events.subscribe(lambda e: results.append(e) if isinstance(e, ev.ToolExecuted) else None)
    try:
        await rt.session().run("measure")
    finally:
        await rt.aclose()
    out: dict[str, list[float]] = {kind: [] for kind in KINDS}
    inner: list[float] = []
    turn = iter(order)
    for e in results:  # a script's calls come before the run_code call that made them
        if not _is_turn_call(e):  # a call a script made: its time is the tools', not the sandbox's
            inner.append(e.duration_ms)
            continue
        kind = next(turn)
        own = e.duration_ms - sum(inner) if kind == "script, one call" else e.duration_ms
        inner.clear()
        out[kind].append(own)
    return out


def _is_turn_call(e: ev.ToolExecuted) -> bool:
    """A call the model made (scripted ids are ``call_<step>_<i>``), not one of a script's."""
    parts = e.call_id.split("_")
    return len(parts) == 3 and parts[1].isdigit()


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=40, help="turns of each kind (default 40)")
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    times = anyio.run(measure, args.calls)
    bare = statistics.median(times["bare"])
    rows = []
    print(f"{'':18} {'p50 ms':>8} {'p90 ms':>8} {'x bare p50':>11}")
    for kind, values in times.items():
        p50, p90 = percentile(values, 0.5), percentile(values, 0.9)
        rows.append({"kind": kind, "p50_ms": round(p50, 2), "p90_ms": round(p90, 2), "ratio": round(p50 / bare, 1)})
        print(f"{kind:18} {p50:8.2f} {p90:8.2f} {p50 / bare:11.1f}")
    own = percentile(times["script, one call"], 0.5)
    print(f"\nthe sandbox's own cost per run_code call: p50 {own:.1f} ms (budget 100 ms)")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump({"calls": args.calls, "rows": rows}, f, indent=2)


if __name__ == "__main__":
    main()
