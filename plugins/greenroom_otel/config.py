"""The ``[plugins.otel]`` section: where spans and metrics go, and what they may hold.

Every key is optional: an unset one falls back to the standard ``OTEL_*`` environment
variable the OpenTelemetry SDK reads (``OTEL_EXPORTER_OTLP_ENDPOINT``,
``OTEL_EXPORTER_OTLP_PROTOCOL``, ``OTEL_SERVICE_NAME`` ...), then to the SDK's default.
"""

from __future__ import annotations

from typing import Literal

import attrs

PROTOCOLS = ("http/protobuf", "grpc", "console")

Protocol = Literal["http/protobuf", "grpc", "console"]


@attrs.frozen
class OtelConfig:
    """Where the ``otel`` plugin exports, and whether spans hold content."""

    endpoint: str | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.min_len(1)),
        metadata={
            "description": (
                "The collector's base URL (http://localhost:4318 for OTLP/HTTP, http://localhost:4317 "
                "for gRPC). Default: OTEL_EXPORTER_OTLP_ENDPOINT (and its per-signal variants), "
                "else the SDK's localhost default."
            )
        },
    )
    protocol: Protocol | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.in_(PROTOCOLS)),
        metadata={
            "description": (
                "How to export: 'http/protobuf' (OTLP over HTTP), 'grpc' (OTLP over gRPC) or 'console' "
                "(spans and metrics printed to stderr). Default: OTEL_EXPORTER_OTLP_PROTOCOL, else http/protobuf."
            )
        },
    )
    service_name: str | None = attrs.field(
        default=None,
        validator=attrs.validators.optional(attrs.validators.min_len(1)),
        metadata={"description": "The service.name resource attribute. Default: OTEL_SERVICE_NAME, else greenroom."},
    )
    capture_content: bool = attrs.field(
        default=False,
        metadata={
            "description": (
                "Put content on spans: the input, the model's messages, tool arguments and results, "
                "masked like the trace. Off by default: spans then hold names, counts and ids only."
            )
        },
    )
    max_content_chars: int = attrs.field(
        default=4000,
        validator=[attrs.validators.ge(64), attrs.validators.le(1_000_000)],
        metadata={"description": "The most characters of one piece of content kept on a span (middle cut out)."},
    )
    export_timeout: float = attrs.field(
        default=5.0,
        validator=[attrs.validators.gt(0), attrs.validators.le(120)],
        metadata={
            "description": (
                "Seconds one export may take, and the bound on flushing when the runtime closes. An "
                "export that fails or times out is a warning; runs never wait for it."
            )
        },
    )
    metrics: bool = attrs.field(
        default=True,
        metadata={"description": "Also export metrics (token usage, durations, tool errors, tokens saved, searches)."},
    )
