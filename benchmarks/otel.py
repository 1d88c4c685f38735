"""What the otel plugin costs a run, per step, as a ratio to the same run without it.

A runtime over the no-op tool and ``--tools`` catalog tools (descriptor-only, synthetic,
all sent) runs sessions in which the model calls the no-op tool on every step but the
last. Each setup has a runtime of its own, and their sessions are interleaved, ``--repeat``
times, in one process:

- **without**: no plugin (the baseline);
- **otel, in memory**: the otel plugin on the SDK's in-memory exporter and reader: the
  hooks' and the SDK's own work, without encoding or sending anything;
- **otel, OTLP/HTTP**: exporting spans and metrics over OTLP/HTTP to a collector on
  loopback (a small HTTP server here that answers every export with 200);
- **otel + content**: the same with ``capture_content = true``;
- **collector down**: exporting to a port where nothing listens (every export fails and
  is a warning, in the SDK's thread).

Per step is the time from one model call to the next (median over sessions): what the
runtime, the plugin's hooks and the span processor's hand-off cost. Exports run in the
SDK's background threads; the no-op model never lets the event loop wait, so their
encoding competes with the loop for the interpreter lock here, where a real model call
(hundreds of milliseconds of waiting) would leave it room. Ratios are to **without**,
measured in the same run.

    python benchmarks/otel.py [--steps 200] [--repeat 7] [--tools 200]
"""

from __future__ import annotations

import argparse
import logging
import socket
import statistics
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anyio

from greenroom import ModelRequest, Plugin, ToolDescriptor, make_plugin_host, tool
from greenroom.config import AgentConfig
from greenroom.models import ModelResponse
from greenroom.providers.scripted import PolicyModel, turn_from_record
from greenroom.run.runtime import Runtime
from greenroom.tools import Tool, ToolCallContext, ToolResult


@tool
async def noop() -> str:
    """Does nothing."""
    return "ok"


class CatalogTool:
    """A descriptor-only tool (never called here): what a catalog adds to every request."""

    def __init__(self, i: int) -> None:
        prop = {"type": "string", "description": "What to look for."}
        self.descriptor = ToolDescriptor(
            name=f"catalog_tool_{i}",
            description=f"Catalog tool number {i}: looks things up in system {i}.",
            parameters={"type": "object", "properties": {"q": prop}, "required": ["q"]},
        )
        self.timeout: float | None = None

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        return ToolResult("unused")


class StampedModel(PolicyModel):
    """Calls the no-op tool until the last step, noting when each model call came."""

    def __init__(self, last: int) -> None:
        call = {"tool_calls": [{"name": "noop", "arguments": {}}]}
        super().__init__(lambda r: call if r.step < last else {"text": "done"})
        self.stamps: list[float] = []

    async def complete(self, request: ModelRequest) -> Any:
        self.stamps.append(time.perf_counter())
        return ModelResponse(turn_from_record(self.policy(request), "bench", request.step))


def collector() -> ThreadingHTTPServer:
    """A loopback OTLP/HTTP endpoint that takes every export (an empty 200 answer)."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length", 0)))
            self.send_response(200)
            self.send_header("content-type", "application/x-protobuf")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def setups(endpoint: str) -> dict[str, list[Plugin]]:
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from greenroom_otel import OtelConfig, OtelPlugin

    down = f"http://127.0.0.1:{closed_port()}"
    in_memory = OtelPlugin(OtelConfig(), span_exporter=InMemorySpanExporter(), metric_reader=InMemoryMetricReader())
    return {
        "without": [],
        "otel, in memory": [in_memory],
        "otel, OTLP/HTTP": [OtelPlugin(OtelConfig(endpoint=endpoint))],
        "otel + content": [OtelPlugin(OtelConfig(endpoint=endpoint, capture_content=True))],
        "collector down": [OtelPlugin(OtelConfig(endpoint=down, export_timeout=1.0))],
    }


async def measure(args: argparse.Namespace) -> dict[str, list[float]]:
    server = collector()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    tools: list[Tool] = [noop, *(CatalogTool(i) for i in range(args.tools))]  # type: ignore[list-item]
    runtimes = {
        label: Runtime(
            model=StampedModel(args.steps),
            tools=tools,
            host=make_plugin_host(records=[], extra=plugins),
            agent=AgentConfig(max_steps=args.steps + 1),
        )
        for label, plugins in setups(endpoint).items()
    }
    per_step: dict[str, list[float]] = {label: [] for label in runtimes}
    try:
        for r in range(args.repeat + 1):  # the first round warms caches up and is not counted
            for label, rt in runtimes.items():
                model = rt.model = StampedModel(args.steps)
                await rt.session().run("go")
                if r:
                    per_step[label].append((model.stamps[-1] - model.stamps[0]) / (len(model.stamps) - 1))
    finally:
        for rt in runtimes.values():
            await rt.aclose()  # flushes what is pending (bounded)
        server.shutdown()
    return per_step


def report(per_step: dict[str, list[float]], args: argparse.Namespace) -> None:
    from rich.console import Console
    from rich.table import Table

    base = statistics.median(per_step["without"])
    table = Table(
        title=f"per step, {args.steps} steps x {args.repeat} sessions, {args.tools + 1} tools sent",
        caption="ratio: to the run without the plugin, in the same run",
    )
    table.add_column("setup")
    table.add_column("µs/step", justify="right")
    table.add_column("ratio", justify="right")
    table.add_column("added µs/step", justify="right")
    for label, values in per_step.items():
        median = statistics.median(values)
        table.add_row(label, f"{median * 1e6:,.0f}", f"{median / base:.2f}x", f"{(median - base) * 1e6:+,.0f}")
    Console(width=80).print(table)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--tools", type=int, default=200, help="catalog tools sent beside the no-op tool")
    args = parser.parse_args()
    logging.getLogger("greenroom.otel").setLevel(logging.ERROR)  # the collector-down warnings are expected
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)
    report(anyio.run(measure, args), args)


if __name__ == "__main__":
    main()
