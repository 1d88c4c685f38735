"""Fixtures of the otel plugin's tests: the plugin on the SDK's in-memory exporter and
reader, and an OTLP/HTTP receiver on loopback that decodes what it is sent with the
official ``opentelemetry-proto`` messages (a real collector's wire format, no mocks)."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs
import pytest

pytest.importorskip("opentelemetry.sdk", reason="the otel extra is not installed: pip install 'greenroom[otel]'")

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from greenroom_otel import OtelConfig, OtelPlugin


@attrs.frozen
class ReceivedSpan:
    """A span as the receiver decoded it from OTLP protobuf."""

    name: str
    kind: int
    trace_id: str
    span_id: str
    parent_id: str
    attributes: dict[str, Any]
    status: int
    service: str


def _value(v: Any) -> Any:
    which = v.WhichOneof("value")
    if which == "array_value":
        return [_value(x) for x in v.array_value.values]
    return getattr(v, which) if which else None


class Receiver:
    """An OTLP/HTTP receiver (``/v1/traces``, ``/v1/metrics``) on a loopback port."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self.metric_names: set[str] = set()
        self.requests = 0
        received = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("content-length", 0)))
                received.requests += 1
                if self.path == "/v1/traces":
                    received._traces(body)
                    answer = ExportTraceServiceResponse().SerializeToString()
                elif self.path == "/v1/metrics":
                    request = ExportMetricsServiceRequest.FromString(body)
                    for rm in request.resource_metrics:
                        for sm in rm.scope_metrics:
                            received.metric_names.update(m.name for m in sm.metrics)
                    answer = ExportMetricsServiceResponse().SerializeToString()
                else:
                    self.send_response(404)
                    self.end_headers()
                    return
                self.send_response(200)
                self.send_header("content-type", "application/x-protobuf")
                self.send_header("content-length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def _traces(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        for rs in request.resource_spans:
            resource = {a.key: _value(a.value) for a in rs.resource.attributes}
            for ss in rs.scope_spans:
                for s in ss.spans:
                    self.spans.append(
                        ReceivedSpan(
                            name=s.name,
                            kind=s.kind,
                            trace_id=s.trace_id.hex(),
                            span_id=s.span_id.hex(),
                            parent_id=s.parent_span_id.hex(),
                            attributes={a.key: _value(a.value) for a in s.attributes},
                            status=s.status.code,
                            service=str(resource.get("service.name")),
                        )
                    )

    def named(self, prefix: str) -> list[ReceivedSpan]:
        return [s for s in self.spans if s.name.startswith(prefix)]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    try:
        yield r
    finally:
        r.close()


class GrpcReceiver:
    """An OTLP/gRPC receiver (the trace service only) on a loopback port, on grpcio."""

    def __init__(self) -> None:
        from concurrent import futures

        import grpc
        from opentelemetry.proto.collector.trace.v1 import trace_service_pb2_grpc

        self.spans: list[str] = []
        received = self

        class Service(trace_service_pb2_grpc.TraceServiceServicer):
            def Export(self, request: Any, context: Any) -> Any:
                for rs in request.resource_spans:
                    for ss in rs.scope_spans:
                        received.spans.extend(s.name for s in ss.spans)
                return ExportTraceServiceResponse()

        self.server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(Service(), self.server)
        port = self.server.add_insecure_port("127.0.0.1:0")
        self.server.start()
        self.url = f"http://127.0.0.1:{port}"

    def close(self) -> None:
        self.server.stop(None)


@pytest.fixture
def grpc_receiver() -> Iterator[GrpcReceiver]:
    r = GrpcReceiver()
    try:
        yield r
    finally:
        r.close()


class Silent:
    """A port that takes connections and never answers: a collector that hangs."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def silent_collector() -> Iterator[Silent]:
    s = Silent()
    try:
        yield s
    finally:
        s.close()


@attrs.define
class Traced:
    plugin: OtelPlugin
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def finished(self) -> list[Any]:
        self.plugin.flush()
        return list(self.spans.get_finished_spans())

    def named(self, prefix: str) -> list[Any]:
        return [s for s in self.finished() if s.name.startswith(prefix)]

    def metric_points(self) -> dict[str, list[Any]]:
        data = self.metrics.get_metrics_data()
        found: dict[str, list[Any]] = {}
        for rm in data.resource_metrics if data else ():
            for sm in rm.scope_metrics:
                for m in sm.metrics:
                    found.setdefault(m.name, []).extend(m.data.data_points)
        return found


@pytest.fixture
def traced() -> Iterator[Any]:
    """``traced(**config)``: an otel plugin on in-memory exporters."""
    made: list[Traced] = []

    def make(**config: Any) -> Traced:
        spans, metrics = InMemorySpanExporter(), InMemoryMetricReader()
        plugin = OtelPlugin(OtelConfig(**config), span_exporter=spans, metric_reader=metrics)
        made.append(Traced(plugin, spans, metrics))
        return made[-1]

    yield make
    for t in made:
        t.plugin.shutdown()
