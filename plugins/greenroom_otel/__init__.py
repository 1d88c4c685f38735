"""otel: every run, model call, tool call and MCP request as OpenTelemetry spans and
metrics, by the GenAI and MCP semantic conventions, exported over OTLP (HTTP or gRPC) or to
the console. Opt-in, with the ``greenroom[otel]`` extra; see docs/observability.md.

Nothing here imports the OpenTelemetry SDK until a run is traced, so ``greenroom plugins``
lists the plugin (as unusable, with the install hint) on a machine without the extra.
"""

from greenroom_otel.config import OtelConfig
from greenroom_otel.plugin import OtelPlugin, missing_sdk

__all__ = ["OtelConfig", "OtelPlugin", "missing_sdk"]
