"""MCP requests as spans, by the MCP conventions: ``{method} {target}``, client or server.

Going upstream, the ``tools/call {tool}`` CLIENT span hangs under the call's
``execute_tool`` span, and its W3C ``traceparent`` (with ``tracestate`` and baggage, as
``OTEL_PROPAGATORS`` says) goes into the request's ``params._meta``. A gateway client's
request is a SERVER span that continues the client's trace from its ``_meta``, else from
its HTTP headers; it is made current in the task that handles the request, so the
client's run's spans (and the upstream request) hang under it: one trace runs client ->
gateway -> upstream server.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from greenroom.kit import McpRequest
from greenroom_otel.spans import RunSpans, RunTrace


def _attributes(request: McpRequest) -> dict[str, Any]:
    attributes: dict[str, Any] = {"mcp.method.name": request.method}
    if request.method == "tools/call" and request.name:
        attributes["gen_ai.operation.name"] = "execute_tool"
        attributes["gen_ai.tool.name"] = request.name
    elif request.method == "prompts/get" and request.name:
        attributes["gen_ai.prompt.name"] = request.name
    elif request.method == "resources/read" and request.name:
        attributes["mcp.resource.uri"] = request.name
    return attributes


def _name(request: McpRequest) -> str:
    return f"{request.method} {request.name}" if request.name else request.method


def _ended(span: Span, request: McpRequest) -> None:
    if request.is_error:
        span.set_attribute("error.type", request.error_type or "tool_error")
        span.set_status(Status(StatusCode.ERROR))
    span.end()


@contextmanager
def upstream_span(spans: RunSpans, run: RunTrace | None, request: McpRequest) -> Iterator[None]:
    """The CLIENT span of a request to an upstream server (inside its run's tool span,
    when ``run`` is given); its context goes into ``_meta``."""
    parent_span = spans.tool_span(run, request.call_id) if run is not None else None
    parent = trace.set_span_in_context(parent_span) if parent_span is not None else None
    attributes = _attributes(request)
    attributes["greenroom.mcp.server"] = request.server
    if request.call_id:
        attributes["gen_ai.tool.call.id"] = request.call_id
    span = spans.t.tracer.start_span(_name(request), context=parent, kind=SpanKind.CLIENT, attributes=attributes)
    current = trace.set_span_in_context(span, parent)
    propagate.inject(request.meta, context=current)
    # current here too: the SDK's own client instrumentation then carries the same trace
    token = otel_context.attach(current)
    try:
        yield
    finally:
        otel_context.detach(token)
        _ended(span, request)


def incoming_context(request: McpRequest) -> otel_context.Context | None:
    """The client's trace context: from ``_meta`` first, else from the HTTP headers."""
    for carrier in (request.meta, request.headers):
        if not _has_traceparent(carrier):
            continue
        try:
            found = propagate.extract({k: v for k, v in carrier.items() if isinstance(v, str)})
        except (ValueError, TypeError):
            continue
        if trace.get_current_span(found).get_span_context().is_valid:
            return found
    return None


def _has_traceparent(carrier: Mapping[str, Any]) -> bool:
    return isinstance(carrier.get("traceparent"), str)


@contextmanager
def server_span(spans: RunSpans, request: McpRequest) -> Iterator[None]:
    """The SERVER span of a gateway client's request, current while it is handled."""
    span = spans.t.tracer.start_span(
        _name(request), context=incoming_context(request), kind=SpanKind.SERVER, attributes=_attributes(request)
    )
    token = otel_context.attach(trace.set_span_in_context(span))
    try:
        yield
    finally:
        otel_context.detach(token)
        _ended(span, request)


__all__ = ["incoming_context", "server_span", "upstream_span"]
