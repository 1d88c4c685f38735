"""The OpenTelemetry SDK as the plugin uses it: a tracer and a meter provider of its own
(the process's global providers are left alone), exporters chosen by the config and the
``OTEL_*`` environment, and every export guarded.

Spans go through a ``BatchSpanProcessor`` and metrics through a periodic reader, both in
the SDK's own background threads: a run never waits on an export. An export that fails
(a collector that is down, slow or refuses) is a warning, once per outage, and each is
bounded by ``export_timeout``; so is the flush when the runtime closes (or, for a runtime
never closed, when the process exits).
"""

from __future__ import annotations

import atexit
import logging
import os
import sys
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import (
    ConsoleMetricExporter,
    MetricExporter,
    MetricExportResult,
    MetricReader,
    MetricsData,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter, SpanExportResult

from greenroom_otel.config import OtelConfig

log = logging.getLogger("greenroom.otel")

_DEFAULT_SERVICE = "greenroom"


def disabled_by_env() -> bool:
    """``OTEL_SDK_DISABLED=true``: the SDK's switch, honoured as the plugin's."""
    return os.environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true"


def protocol_of(config: OtelConfig, signal: str) -> str:
    """The config's protocol, else ``OTEL_EXPORTER_OTLP_<SIGNAL>_PROTOCOL``, else
    ``OTEL_EXPORTER_OTLP_PROTOCOL``, else ``http/protobuf``."""
    if config.protocol:
        return config.protocol
    env = os.environ.get(f"OTEL_EXPORTER_OTLP_{signal.upper()}_PROTOCOL") or os.environ.get(
        "OTEL_EXPORTER_OTLP_PROTOCOL"
    )
    return (env or "http/protobuf").strip()


def _endpoint(config: OtelConfig, protocol: str, path: str) -> str | None:
    if not config.endpoint:
        return None  # the SDK reads OTEL_EXPORTER_OTLP_ENDPOINT and its per-signal variants
    if protocol == "grpc":
        return config.endpoint
    return config.endpoint.rstrip("/") + "/" + path


def span_exporter(config: OtelConfig) -> SpanExporter:
    protocol = protocol_of(config, "traces")
    if protocol == "console":
        # stderr, the stream of now (not of import time): stdout is the answer's (run -q in a pipe)
        return ConsoleSpanExporter(out=sys.stderr)
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter as GrpcSpans

        return GrpcSpans(endpoint=_endpoint(config, protocol, ""), timeout=config.export_timeout)
    if protocol != "http/protobuf":
        raise ValueError(f"unknown OTLP protocol {protocol!r}: one of http/protobuf, grpc, console")
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter as HttpSpans

    return HttpSpans(endpoint=_endpoint(config, protocol, "v1/traces"), timeout=config.export_timeout)


def metric_exporter(config: OtelConfig) -> MetricExporter:
    protocol = protocol_of(config, "metrics")
    if protocol == "console":
        return ConsoleMetricExporter(out=sys.stderr)
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.metric_exporter import OTLPMetricExporter as GrpcMetrics

        return GrpcMetrics(endpoint=_endpoint(config, protocol, ""), timeout=config.export_timeout)
    if protocol != "http/protobuf":
        raise ValueError(f"unknown OTLP protocol {protocol!r}: one of http/protobuf, grpc, console")
    from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter as HttpMetrics

    return HttpMetrics(endpoint=_endpoint(config, protocol, "v1/metrics"), timeout=config.export_timeout)


class _Outage:
    """Warns once when exports start failing, and once when they work again."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.failing = False
        self.failures = 0
        self._lock = threading.Lock()

    def result(self, ok: bool, detail: str = "") -> None:
        with self._lock:
            if ok and self.failing:
                self.failing = False
                log.warning("otel: exporting %s works again", self.what)
            elif not ok:
                self.failures += 1
                if not self.failing:
                    self.failing = True
                    log.warning("otel: could not export %s (%s); runs go on, later exports retry", self.what, detail)


class GuardedSpanExporter(SpanExporter):
    """A span exporter whose every failure is a warning, never an exception."""

    def __init__(self, inner: SpanExporter) -> None:
        self.inner = inner
        self.outage = _Outage("spans")

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self.inner.export(spans)
        except Exception as exc:
            self.outage.result(False, f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        ok = result is SpanExportResult.SUCCESS
        self.outage.result(ok, "the collector did not take them")
        return result

    def shutdown(self) -> None:
        try:
            self.inner.shutdown()
        except Exception as exc:
            log.warning("otel: closing the span exporter failed: %s", exc)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception:
            return False


class GuardedMetricExporter(MetricExporter):
    """A metric exporter whose every failure is a warning, never an exception."""

    def __init__(self, inner: MetricExporter) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality, preferred_aggregation=inner._preferred_aggregation
        )
        self.inner = inner
        self.outage = _Outage("metrics")

    def export(self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any) -> MetricExportResult:
        try:
            result = self.inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception as exc:
            self.outage.result(False, f"{type(exc).__name__}: {exc}")
            return MetricExportResult.FAILURE
        self.outage.result(result is MetricExportResult.SUCCESS, "the collector did not take them")
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        try:
            return bool(self.inner.force_flush(timeout_millis))
        except Exception:
            return False

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        try:
            self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)
        except Exception as exc:
            log.warning("otel: closing the metric exporter failed: %s", exc)


class Telemetry:
    """The plugin's providers, tracer, meter and instruments.

    ``span_exporter`` and ``metric_reader`` replace what the config would build (an
    in-memory exporter in tests, say); the exporters are guarded either way.
    """

    def __init__(
        self,
        config: OtelConfig,
        *,
        span_exporter_: SpanExporter | None = None,
        metric_reader: MetricReader | None = None,
    ) -> None:
        from greenroom import __version__

        self.config = config
        attributes: dict[str, Any] = {}
        if config.service_name:
            attributes["service.name"] = config.service_name
        elif not os.environ.get("OTEL_SERVICE_NAME"):
            attributes["service.name"] = _DEFAULT_SERVICE
        resource = Resource.create(attributes)  # with OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME
        timeout_ms = int(config.export_timeout * 1000)
        self.spans = GuardedSpanExporter(span_exporter_ or span_exporter(config))
        self.tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
        self.tracer_provider.add_span_processor(BatchSpanProcessor(self.spans, export_timeout_millis=timeout_ms))
        self.tracer = self.tracer_provider.get_tracer("greenroom", __version__)
        readers: list[MetricReader] = []
        if metric_reader is not None:
            readers.append(metric_reader)
        elif config.metrics:
            exporter = GuardedMetricExporter(metric_exporter(config))
            readers.append(PeriodicExportingMetricReader(exporter, export_timeout_millis=timeout_ms))
        self.meter_provider = MeterProvider(resource=resource, metric_readers=readers, shutdown_on_exit=False)
        meter = self.meter_provider.get_meter("greenroom", __version__)
        self.token_usage = meter.create_histogram(
            "gen_ai.client.token.usage", unit="{token}", description="Tokens used per model call, by type"
        )
        self.duration = meter.create_histogram(
            "gen_ai.client.operation.duration", unit="s", description="Duration of model calls and tool calls"
        )
        self.tool_errors = meter.create_counter(
            "greenroom.tool_call.errors", unit="{call}", description="Tool calls that ended in an error result"
        )
        self.tokens_saved = meter.create_counter(
            "greenroom.deferral.tokens_saved",
            unit="{token}",
            description="Tool-definition tokens not sent because tools were deferred, summed over requests",
        )
        self.searches = meter.create_histogram(
            "greenroom.run.searches", unit="{search}", description="Tool searches per run"
        )
        self._closed = False
        atexit.register(self.shutdown)  # a runtime never closed still flushes as the process exits

    def flush(self) -> bool:
        """Export what is pending now, bounded by ``export_timeout`` (blocks: not on a loop)."""
        timeout_ms = int(self.config.export_timeout * 1000)
        ok = self.tracer_provider.force_flush(timeout_ms)
        try:
            self.meter_provider.force_flush(timeout_ms)
        except Exception as exc:
            log.warning("otel: flushing metrics failed: %s", exc)
        return bool(ok)

    def shutdown(self) -> None:
        """Flush and stop the exporters, bounded by ``export_timeout`` (blocks: not on a loop)."""
        if self._closed:
            return
        self._closed = True
        atexit.unregister(self.shutdown)
        try:
            self.flush()
            self.tracer_provider.shutdown()
            self.meter_provider.shutdown(timeout_millis=self.config.export_timeout * 1000)
        except Exception as exc:
            log.warning("otel: shutting the exporters down failed: %s", exc)


__all__ = ["GuardedMetricExporter", "GuardedSpanExporter", "Telemetry", "disabled_by_env", "protocol_of"]
