"""A run as spans, by the OpenTelemetry GenAI conventions, built from its events.

::

    invoke_agent {agent}              the run (an agent run; a gateway client's run has none:
      chat {model}                     each of its requests is a server span of its own)
      execute_tool {tool}             each call, the real tool (a dispatched call unwrapped)
        tools/call {tool}  (CLIENT)   the request to an upstream MCP server (greenroom_otel.mcp)

A model call's span runs from its ``request`` event to its ``response``; a tool call's
from ``greenroom_before_tool_execute`` to its ``tool_result`` (a call refused before the
gates gets its span then, back-dated by its duration). Searches and group loads add their
attributes to the tool span they happen in. Content is put on spans only when the config
says so; the events it comes from are already masked.
"""

from __future__ import annotations

import json
import time
from typing import Any

import attrs
from opentelemetry import context as otel_context
from opentelemetry import trace
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from greenroom import Event, RunContext, ToolCall, ToolDescriptor
from greenroom.kit import descriptor_costs, redact_known
from greenroom_otel.config import OtelConfig
from greenroom_otel.run_state import OtelRun
from greenroom_otel.telemetry import Telemetry

GEN_AI_OP = "gen_ai.operation.name"


def model_parts(reference: str) -> tuple[str, str]:
    """``provider:name`` as (provider, model); a bare reference is both."""
    provider, sep, name = reference.partition(":")
    return (provider, name) if sep and name else (provider, provider)


def cut(text: str, limit: int) -> str:
    """Content for a span: with every secret the process knows masked (the events' text and
    JSON fields, arguments included, are masked with the runtime's secrets already), and
    its middle left out when it is over ``limit`` characters."""
    text = redact_known(text)
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}[... {len(text) - 2 * half} characters left out ...]{text[-half:]}"


def as_json(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str, sort_keys=True)


@attrs.define(eq=False)
class RunTrace:
    """The open spans and counters of one run."""

    kind: str
    root: Span | None
    parent: otel_context.Context | None
    """What a span of this run hangs under (the run's span; None: the current context)."""
    model: tuple[str, str]
    chat: Span | None = None
    chat_started: float = 0.0
    tools: dict[str, Span] = attrs.field(factory=dict)
    requested: dict[str, str] = attrs.field(factory=dict)
    rejected: dict[str, str] = attrs.field(factory=dict)
    searches: int = 0
    tokens_saved: int = 0
    visible: tuple[ToolDescriptor, ...] | None = None
    visible_tokens: int = 0
    """The definition tokens of ``visible`` (the agent's tools), measured again when it changes."""


class RunSpans:
    """Turns each run's events into spans and metrics (one instance per plugin; each
    run's spans in the run's own state, ``OtelRun``)."""

    def __init__(self, telemetry: Telemetry, config: OtelConfig) -> None:
        self.t = telemetry
        self.config = config

    # ---------------------------------------------------------------- events
    def on_event(self, ctx: RunContext, event: Event) -> None:
        kind = event.kind
        if kind == "run_start":
            self._start(ctx, event)
            return
        run = ctx.state[OtelRun].trace
        if run is None:
            return
        handler = _HANDLERS.get(kind)
        if handler is not None:
            handler(self, ctx, run, event)

    def _start(self, ctx: RunContext, event: Event) -> None:
        run_kind = ctx.kind.value
        if run_kind == "preview":
            return  # nothing happens in a preview: greenroom inspect is not traced
        model = model_parts(ctx.agent.model)
        root = None
        parent = None
        if run_kind == "agent":
            attributes: dict[str, Any] = {
                GEN_AI_OP: "invoke_agent",
                "gen_ai.agent.name": ctx.agent.id,
                "gen_ai.agent.id": ctx.agent.id,
                "gen_ai.conversation.id": ctx.session_id,
                "gen_ai.provider.name": model[0],
                "gen_ai.request.model": model[1],
                "greenroom.run.id": ctx.run_id,
                "greenroom.run.kind": run_kind,
            }
            if self.config.capture_content:
                text = cut(getattr(event, "input", ""), self.config.max_content_chars)
                attributes["gen_ai.input.messages"] = as_json(
                    [{"role": "user", "parts": [{"type": "text", "content": text}]}]
                )
            root = self.t.tracer.start_span(
                f"invoke_agent {ctx.agent.id}", kind=SpanKind.INTERNAL, attributes=attributes
            )
            parent = trace.set_span_in_context(root)
        ctx.state[OtelRun].trace = RunTrace(run_kind, root, parent, model)

    def _request(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        if run.kind != "agent":
            return  # a client's step is the view it is offered, not a model call
        visible = ctx.visible_tools()  # the same tuple until the tools change: measured once per change
        if run.visible is not visible:
            run.visible, run.visible_tokens = visible, sum(descriptor_costs(list(visible), "definition_tokens"))
        saved = max(0, run.visible_tokens - event.tools_tokens)
        run.tokens_saved += saved
        provider, model = run.model
        run.chat_started = time.perf_counter()
        run.chat = self.t.tracer.start_span(
            f"chat {model}",
            context=run.parent,
            kind=SpanKind.CLIENT,
            attributes={
                GEN_AI_OP: "chat",
                "gen_ai.provider.name": provider,
                "gen_ai.request.model": model,
                "greenroom.step": event.step,
                "greenroom.request.tools": len(event.tool_names),
                "greenroom.request.prefix_hash": event.prefix_hash,
                "greenroom.request.system_tokens": event.system_tokens,
                "greenroom.request.tools_tokens": event.tools_tokens,
                "greenroom.request.messages_tokens": event.messages_tokens,
                "greenroom.tools.visible": len(visible),
                "greenroom.tools.deferred": max(0, len(visible) - len(event.tool_names)),
                "greenroom.deferral.tokens_saved": saved,
            },
        )
        if saved:
            self.t.tokens_saved.add(saved, {"gen_ai.agent.name": ctx.agent.id})

    def _response(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        span, run.chat = run.chat, None
        if span is None:
            return
        span.set_attributes(
            {
                "gen_ai.usage.input_tokens": event.input_tokens,
                "gen_ai.usage.output_tokens": event.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": event.cached_input_tokens,
                "gen_ai.usage.cache_creation.input_tokens": event.cache_write_tokens,
                "gen_ai.response.finish_reasons": ["tool_calls" if event.tool_calls else "stop"],
            }
        )
        if self.config.capture_content:
            parts: list[dict[str, Any]] = []
            if event.text:
                parts.append({"type": "text", "content": cut(event.text, self.config.max_content_chars)})
            for call in event.tool_calls:
                arguments = cut(as_json(call.get("arguments")), self.config.max_content_chars)
                parts.append(
                    {"type": "tool_call", "id": call.get("id"), "name": call.get("name"), "arguments": arguments}
                )
            span.set_attribute("gen_ai.output.messages", as_json([{"role": "assistant", "parts": parts}]))
        span.end()
        provider, model = run.model
        common = {GEN_AI_OP: "chat", "gen_ai.provider.name": provider, "gen_ai.request.model": model}
        self.t.duration.record(time.perf_counter() - run.chat_started, common)
        self.t.token_usage.record(event.input_tokens, {**common, "gen_ai.token.type": "input"})
        self.t.token_usage.record(event.output_tokens, {**common, "gen_ai.token.type": "output"})

    # ---------------------------------------------------------------- tool calls
    def open_tool(self, ctx: RunContext, call: ToolCall, tool: ToolDescriptor) -> None:
        """A call passed the checks: its span starts (the real tool, after resolve)."""
        run = ctx.state[OtelRun].trace
        if run is None:
            return
        attributes: dict[str, Any] = {
            GEN_AI_OP: "execute_tool",
            "gen_ai.tool.name": call.name,
            "gen_ai.tool.call.id": call.id,
            "gen_ai.tool.type": "function",
            "greenroom.step": ctx.step,
        }
        if tool.group:
            attributes["greenroom.tool.group"] = tool.group
        if call.id in run.requested:
            attributes["greenroom.tool.requested"] = run.requested[call.id]
        # a client's call hangs under the server span its request made current
        parent = run.parent if run.kind == "agent" else None
        run.tools[call.id] = self.t.tracer.start_span(
            f"execute_tool {call.name}", context=parent, kind=SpanKind.INTERNAL, attributes=attributes
        )

    def tool_span(self, run: RunTrace, call_id: str | None) -> Span | None:
        return run.tools.get(call_id) if call_id else None

    def _resolve(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        run.requested[event.call_id] = event.requested

    def _rejected(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        run.rejected[event.call_id] = event.reason

    def _result(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        span = run.tools.pop(event.call_id, None)
        requested = run.requested.pop(event.call_id, None)
        reason = run.rejected.pop(event.call_id, None)
        if span is None:  # refused before the gates: its span now, back-dated by its duration
            start = time.time_ns() - int(event.duration_ms * 1e6)
            attributes: dict[str, Any] = {
                GEN_AI_OP: "execute_tool",
                "gen_ai.tool.name": event.tool,
                "gen_ai.tool.call.id": event.call_id,
                "gen_ai.tool.type": "function",
                "greenroom.step": event.step,
            }
            if requested:
                attributes["greenroom.tool.requested"] = requested
            parent = run.parent if run.kind == "agent" else None
            span = self.t.tracer.start_span(
                f"execute_tool {event.tool}", context=parent, attributes=attributes, start_time=start
            )
        if event.decided_by:
            span.set_attribute("greenroom.tool.decided_by", event.decided_by)
        error_type = None
        if event.is_error:
            error_type = reason or ("blocked" if event.decided_by == "gate" else "tool_error")
            span.set_attribute("error.type", error_type)
            if reason:
                span.set_attribute("greenroom.tool.rejected", reason)
            span.set_status(Status(StatusCode.ERROR))
        if self.config.capture_content:
            limit = self.config.max_content_chars
            span.set_attribute("gen_ai.tool.call.arguments", cut(as_json(event.arguments), limit))
            span.set_attribute("gen_ai.tool.call.result", cut(event.content, limit))
        span.end()
        common: dict[str, Any] = {GEN_AI_OP: "execute_tool", "gen_ai.tool.name": event.tool}
        if error_type:
            common["error.type"] = error_type
            self.t.tool_errors.add(1, common)
        self.t.duration.record(event.duration_ms / 1000, common)

    # ---------------------------------------------------------------- searches, groups
    def _innermost(self, run: RunTrace) -> Span | None:
        """The tool span a search or a group load happens in: the latest open one."""
        return next(reversed(run.tools.values()), None) if run.tools else None

    def _search(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        run.searches += 1
        results = list(getattr(event, "results", ()))
        hits = [str(name) for name, _ in results]
        attributes: dict[str, Any] = {
            "greenroom.search.query": cut(str(getattr(event, "query", "")), self.config.max_content_chars),
            "greenroom.search.mode": str(getattr(event, "mode", "")),
            "greenroom.search.hits": hits,
            "greenroom.search.scores": [float(score) for _, score in results],
            "greenroom.search.hit_count": len(hits),
            "greenroom.search.missing": list(getattr(event, "missing", ())),
        }
        priors = ctx.priors
        if priors.loaded and hits:  # what the learned usage priors boosted the ranking with
            attributes["greenroom.search.priors"] = [priors.get(name) for name in hits]
        span = self._innermost(run)
        if span is not None:
            span.set_attributes(attributes)
        elif run.root is not None:
            run.root.add_event("greenroom.search", attributes)

    def _group(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        attributes: dict[str, Any] = {"greenroom.group.id": event.group, "greenroom.group.tools": len(event.tools)}
        if event.error:
            attributes["greenroom.group.error"] = event.error
        span = self._innermost(run)
        if span is not None:
            span.set_attributes(attributes)
            return
        # loaded before a call's gates (a call of a tool whose group was not loaded yet)
        parent = run.parent if run.kind == "agent" else None
        load = self.t.tracer.start_span(
            f"execute_tool load_group {event.group}",
            context=parent,
            attributes={GEN_AI_OP: "execute_tool", "gen_ai.tool.name": "load_group", **attributes},
        )
        if event.error:
            load.set_attribute("error.type", "group_load_failed")
            load.set_status(Status(StatusCode.ERROR))
        load.end()

    def _placement(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        if run.root is not None:
            run.root.add_event(
                f"greenroom.{event.kind}",
                {
                    "gen_ai.tool.name": str(getattr(event, "tool", "")),
                    "greenroom.reason": str(getattr(event, "reason", "")),
                },
            )

    def _priors(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        if run.root is not None:
            run.root.set_attributes(
                {
                    "greenroom.priors.tools": int(getattr(event, "tools", 0)),
                    "greenroom.priors.sessions": int(getattr(event, "sessions", 0)),
                }
            )

    def _plugin_error(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        target = self.tool_span(run, getattr(event, "call_id", None)) or run.root
        if target is not None:
            target.add_event(
                "greenroom.plugin_error",
                {"greenroom.plugin": event.plugin, "greenroom.hook": event.hook, "greenroom.message": event.message},
            )

    # ---------------------------------------------------------------- the end
    def _end(self, ctx: RunContext, run: RunTrace, event: Any) -> None:
        ctx.state[OtelRun].trace = None
        failed = event.stop_reason == "error"
        if run.chat is not None:  # the model call that failed or was cancelled
            if failed:
                run.chat.set_attribute("error.type", _failure_type(event))
                run.chat.set_status(Status(StatusCode.ERROR))
            run.chat.end()
        for span in run.tools.values():
            span.end()
        if run.kind != "agent":
            return
        self.t.searches.record(run.searches, {"gen_ai.agent.name": ctx.agent.id})
        if run.root is None:
            return
        run.root.set_attributes(
            {
                "gen_ai.usage.input_tokens": event.input_tokens,
                "gen_ai.usage.output_tokens": event.output_tokens,
                "gen_ai.usage.cache_read.input_tokens": event.cached_input_tokens,
                "greenroom.run.stop_reason": event.stop_reason,
                "greenroom.run.steps": event.steps,
                "greenroom.run.searches": run.searches,
                "greenroom.deferral.tokens_saved": run.tokens_saved,
            }
        )
        if failed:
            run.root.set_attribute("error.type", _failure_type(event))
            run.root.set_status(Status(StatusCode.ERROR, event.error or None))
        run.root.end()


def _failure_type(event: Any) -> str:
    failure = getattr(event, "failure", None)
    return str(getattr(failure, "error_type", None) or "error")


_HANDLERS: dict[str, Any] = {
    "request": RunSpans._request,
    "response": RunSpans._response,
    "resolve": RunSpans._resolve,
    "tool_rejected": RunSpans._rejected,
    "tool_result": RunSpans._result,
    "search": RunSpans._search,
    "group_load": RunSpans._group,
    "promote": RunSpans._placement,
    "defer": RunSpans._placement,
    "priors_load": RunSpans._priors,
    "error": RunSpans._plugin_error,
    "run_end": RunSpans._end,
}
"""Event kind -> what it does to the run's spans (the kinds the trace gives events)."""


__all__ = ["RunSpans", "RunTrace", "as_json", "cut", "model_parts"]
