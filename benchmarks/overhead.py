"""Per-step runtime overhead: everything but the model and the tools.

A run of S steps where the model calls one no-op tool per step, with 0, 1 and 10 no-op
plugins (each implementing every phase hook), over catalogs of 100, 1,000 and 10,000
tools, with and without the deferred-tools plugin. The baseline is a bare loop that makes
the same model calls and tool executions with no runtime around them, measured in the
same run. A run of one step is timed too: per-step overhead is (T(S) - T(1)) / (S - 1)
minus the bare loop's step, so what a session pays once (placing every tool, rendering
the listing, the end-of-run snapshot) is reported on its own as "session start".

    python benchmarks/overhead.py [--steps 200] [--repeat 5]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import anyio
from rich.console import Console
from rich.table import Table

from greenroom import ModelRequest, Plugin, ToolCallContext, ToolDescriptor, hookimpl, tool
from greenroom.config import AgentConfig
from greenroom.plugins import make_plugin_host
from greenroom.providers.scripted import PolicyModel
from greenroom.runtime import Runtime
from greenroom.tools import CatalogTool
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin


class NoOp(Plugin):
    """Implements every phase hook and does nothing."""

    def __init__(self, index: int) -> None:
        super().__init__()
        self.name = f"noop-{index}"  # type: ignore[misc]

    @hookimpl
    def greenroom_run_start(self, ctx: Any) -> None:
        return None

    @hookimpl
    def greenroom_before_inference(self, ctx: Any, request: Any) -> None:
        return None

    @hookimpl
    def greenroom_after_inference(self, ctx: Any, response: Any) -> None:
        return None

    @hookimpl
    def greenroom_resolve_tool_call(self, ctx: Any, call: Any) -> None:
        return None

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: Any, call: Any, tool: Any) -> None:
        return None

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: Any, call: Any, result: Any) -> None:
        return None

    @hookimpl
    def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
        return None


@tool
async def noop() -> str:
    """Does nothing."""
    return "ok"


def catalog(n: int) -> list[Any]:
    params = {"type": "object", "properties": {"q": {"type": "string", "description": "A query string."}}}
    return [
        CatalogTool(ToolDescriptor(f"tool_{i:05d}", f"Catalog tool number {i}.", params), "bench") for i in range(n)
    ]


def policy(steps: int) -> Any:
    call = {"tool_calls": [{"name": "noop", "arguments": {}}]}

    def decide(request: ModelRequest) -> dict[str, Any]:
        return call if request.step < steps else {"text": "done"}

    return decide


class CountingModel(PolicyModel):
    """PolicyModel without usage estimation (token counting belongs to the model side)."""

    async def complete(self, request: ModelRequest) -> Any:
        from greenroom.models import ModelResponse
        from greenroom.providers.scripted import turn_from_record

        self.requests.append(request)
        return ModelResponse(turn_from_record(self.policy(request), "bench", request.step))


async def bare_loop(steps: int) -> float:
    model = CountingModel(policy(steps))
    ctx = ToolCallContext("c", "r", "noop")
    req = ModelRequest(system=(), tools=(noop.descriptor,), messages=(), step=0)
    start = time.perf_counter()
    for step in range(1, steps + 1):
        resp = await model.complete(ModelRequest(req.system, req.tools, req.messages, step))
        for _ in resp.tool_calls:
            await noop.execute({}, ctx)
    return time.perf_counter() - start


async def runtime_loop(steps: int, tools: list[Any], plugins: list[Plugin]) -> float:
    rt = Runtime(
        model=CountingModel(policy(steps)),
        tools=[noop, *tools],
        host=make_plugin_host(records=[], extra=plugins),
        agent=AgentConfig(max_steps=steps + 1),
    )
    session = rt.session()
    start = time.perf_counter()
    await session.run("go")
    return time.perf_counter() - start


def timed(steps: int, tools: list[Any], plugins: list[Plugin], repeat: int) -> float:
    """Median wall time of ``repeat`` runs of ``steps`` steps."""
    return statistics.median(anyio.run(runtime_loop, steps, tools, plugins) for _ in range(repeat))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--sizes", type=int, nargs="*", default=[100, 1000, 10000])
    args = ap.parse_args(argv)
    console = Console()
    bare = statistics.median(anyio.run(bare_loop, args.steps) for _ in range(args.repeat)) / args.steps
    table = Table(
        title=f"per-step overhead (median of {args.repeat} runs of {args.steps} steps); "
        f"bare loop {bare * 1e6:.1f} µs/step"
    )
    for col in ("tools", "plugins", "deferral", "µs/step", "overhead µs/step", "x bare", "session start ms"):
        table.add_column(col, justify="right")
    for n in args.sizes:
        tools = catalog(n)
        for count in (0, 1, 10):
            for deferral in (False, True):
                plugins: list[Plugin] = [NoOp(i) for i in range(count)]
                if deferral:
                    plugins.append(DeferredToolsPlugin(DeferredConfig(enabled=True)))
                anyio.run(runtime_loop, 1, tools, plugins)  # warm the per-descriptor caches
                one = timed(1, tools, plugins, args.repeat)
                full = timed(args.steps, tools, plugins, args.repeat)
                per = (full - one) / (args.steps - 1)
                table.add_row(
                    f"{n:,}",
                    str(count),
                    "dispatch" if deferral else "all sent",
                    f"{per * 1e6:,.0f}",
                    f"{(per - bare) * 1e6:,.0f}",
                    f"{per / bare:,.1f}",
                    f"{(one - bare) * 1e3:,.1f}",
                )
    console.print(table)
    return 0


if __name__ == "__main__":
    sys.exit(main())
