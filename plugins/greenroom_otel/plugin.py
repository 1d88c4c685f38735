"""``OtelPlugin``: runs, model calls, tool calls and MCP requests as OpenTelemetry spans
and metrics. Opt-in (``[plugins] enable = ["otel"]``), and usable only with the
``greenroom[otel]`` extra installed.

Tracing never breaks a run: every hook answers for itself (a failure is logged once and
the run goes on), the SDK is set up on first use, exports run in the SDK's background
threads bounded by ``export_timeout``, and the runtime's close flushes them, bounded too.
"""

from __future__ import annotations

import importlib.util
import logging
import os
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, ClassVar

import anyio
import anyio.to_thread

from greenroom import Event, Plugin, RunContext, Scope, StateRegistry, ToolCall, ToolDescriptor, hookimpl
from greenroom.kit import McpRequest
from greenroom_otel.config import OtelConfig
from greenroom_otel.run_state import OtelRun

if TYPE_CHECKING:
    from opentelemetry.sdk.metrics.export import MetricReader
    from opentelemetry.sdk.trace.export import SpanExporter

    from greenroom_otel.spans import RunSpans
    from greenroom_otel.telemetry import Telemetry

log = logging.getLogger("greenroom.otel")

_NEEDS = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")


def missing_sdk() -> str | None:
    """What is missing for the plugin to work here, or None (asked without importing it)."""
    for module in _NEEDS:
        try:
            found = importlib.util.find_spec(module) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            return (
                f"the otel plugin needs the {module.split('.')[1]!r} package ({module}): pip install 'greenroom[otel]'"
            )
    return None


class OtelPlugin(Plugin):
    """Exports each run as a trace by the GenAI conventions, and MCP requests by the MCP ones."""

    name = "otel"
    config_class = OtelConfig
    default_enabled = False
    nonblocking: ClassVar[bool] = True  # every hook hands work to the SDK's threads and returns

    def __init__(
        self,
        config: OtelConfig | None = None,
        *,
        span_exporter: SpanExporter | None = None,
        metric_reader: MetricReader | None = None,
    ) -> None:
        super().__init__(config)
        self._span_exporter = span_exporter
        self._metric_reader = metric_reader
        self._telemetry: Telemetry | None = None
        self._spans: RunSpans | None = None
        self._off = False
        self._closing_registered = False
        self._failed: set[str] = set()

    @classmethod
    def unusable(cls) -> str | None:
        """Why this plugin cannot work here (``greenroom plugins`` says it), or None."""
        return missing_sdk()

    # ---------------------------------------------------------------- set-up, on first use
    @property
    def telemetry(self) -> Telemetry | None:
        """The SDK's providers, set up on first use; None when tracing is off here."""
        return self._telemetry if self._spans is not None else None

    def _ready(self, ctx: RunContext | None) -> RunSpans | None:
        if self._spans is not None or self._off:
            return self._spans
        if os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
            self._off = True
            return None
        missing = missing_sdk() if self._span_exporter is None else None
        if missing:
            log.warning("%s; runs go on without tracing", missing)
            self._off = True
            return None
        from greenroom_otel.spans import RunSpans
        from greenroom_otel.telemetry import Telemetry

        try:
            self._telemetry = Telemetry(
                self.config, span_exporter_=self._span_exporter, metric_reader=self._metric_reader
            )
        except Exception as exc:  # a bad endpoint or protocol from the environment, say
            log.warning("otel: tracing is off: %s: %s", type(exc).__name__, exc)
            self._off = True
            return None
        self._spans = RunSpans(self._telemetry, self.config)
        return self._spans

    def _register_close(self, ctx: RunContext) -> None:
        if not self._closing_registered:
            self._closing_registered = True
            ctx.on_close(self.aclose)

    def _contained(self, hook: str, exc: Exception) -> None:
        if hook not in self._failed:  # once per hook: a broken mapping must not flood the log
            self._failed.add(hook)
            log.warning("otel: %s failed (%s: %s); the run goes on", hook, type(exc).__name__, exc, exc_info=True)

    # ---------------------------------------------------------------- hooks
    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(OtelRun, Scope.RUN, owner=self.name)

    @hookimpl
    def greenroom_event(self, ctx: RunContext | None, event: Event) -> None:
        if ctx is None or ctx.kind.value == "preview":
            return  # nothing of a preview (greenroom inspect) is traced
        try:
            spans = self._ready(ctx)
            if spans is None:
                return
            if event.kind == "run_start":
                self._register_close(ctx)
            spans.on_event(ctx, event)
        except Exception as exc:
            self._contained("greenroom_event", exc)

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: RunContext, call: ToolCall, tool: ToolDescriptor) -> None:
        try:
            if self._spans is not None:
                self._spans.open_tool(ctx, call, tool)
        except Exception as exc:
            self._contained("greenroom_before_tool_execute", exc)

    @hookimpl
    def greenroom_mcp_request(self, ctx: RunContext, request: McpRequest) -> AbstractContextManager[Any] | None:
        try:
            if self._spans is None:
                return None
            from greenroom_otel.mcp import upstream_span

            return upstream_span(self._spans, ctx.state[OtelRun].trace, request)
        except Exception as exc:
            self._contained("greenroom_mcp_request", exc)
            return None

    @hookimpl(optionalhook=True)  # the gateway declares it: otel loads where the gateway is not installed
    def greenroom_serve_request(self, request: McpRequest) -> AbstractContextManager[Any] | None:
        try:
            spans = self._ready(None)
            if spans is None:
                return None
            from greenroom_otel.mcp import server_span

            return server_span(spans, request)
        except Exception as exc:
            self._contained("greenroom_serve_request", exc)
            return None

    # ---------------------------------------------------------------- flushing
    def flush(self) -> bool:
        """Export what is pending now (blocks, bounded by ``export_timeout``)."""
        return self._telemetry.flush() if self._telemetry is not None else True

    def shutdown(self) -> None:
        """Flush and stop exporting (blocks, bounded by ``export_timeout``)."""
        if self._telemetry is not None:
            self._telemetry.shutdown()

    async def aclose(self) -> None:
        """The runtime closes: flush and stop in a worker thread, waiting at most a little
        over ``export_timeout`` (a collector that hangs is left to its thread)."""
        if self._telemetry is None:
            return
        with anyio.move_on_after(self.config.export_timeout * 2 + 1):
            await anyio.to_thread.run_sync(self.shutdown, abandon_on_cancel=True)


__all__ = ["OtelPlugin", "missing_sdk"]
