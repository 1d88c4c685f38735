"""A run as spans: names, parents and attributes by the GenAI conventions, the real tool of
a dispatched call, errors, content only when asked (masked), and the metrics."""

from __future__ import annotations

import json
from typing import Any

import attrs
import pytest
from opentelemetry.trace import SpanKind, StatusCode

from greenroom import ModelRequest, ModelResponse, Plugin, ToolCall, Usage, hookimpl, tool
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.context import RunKind

pytestmark = pytest.mark.anyio

SECRET = "srv-token-0123456789abcdef"
API_KEY = "sk-test-otel-9876543210fedcba"


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: The city.
    """
    return f"{city}: sunny"


@tool
def explode(why: str) -> str:
    """Fail on purpose.

    Args:
        why: Why.
    """
    raise RuntimeError(why)


@tool
def dispatch(tool_name: str, arguments: dict) -> str:
    """A dispatcher the resolve hook unwraps (never runs itself).

    Args:
        tool_name: The tool to call.
        arguments: Its arguments.
    """
    return "not unwrapped"


class Dispatcher(Plugin):
    """Unwraps ``dispatch(tool_name, arguments)`` into the real call, as a deferral plugin does."""

    name = "dispatcher"
    nonblocking = True

    @hookimpl
    def greenroom_resolve_tool_call(self, ctx: Any, call: ToolCall) -> ToolCall | None:
        if call.name != "dispatch" or not call.arguments:
            return None
        return ToolCall(id=call.id, name=call.arguments["tool_name"], arguments=call.arguments["arguments"])


class Billed:
    """The scripted model, each answer billed 120 input tokens (100 from the cache) and 7 out."""

    def __init__(self, turns: list[Any]) -> None:
        self.inner = ScriptedModel(turns)

    async def complete(self, request: ModelRequest) -> ModelResponse:
        response = await self.inner.complete(request)
        return attrs.evolve(response, usage=Usage(input_tokens=120, output_tokens=7, cached_input_tokens=100))


def turns() -> Billed:
    return Billed(
        [
            {"tool_calls": [{"name": "dispatch", "arguments": {"tool_name": "lookup", "arguments": {"city": "Oslo"}}}]},
            {"tool_calls": [{"name": "explode", "arguments": {"why": "boom"}}, {"name": "nope", "arguments": {}}]},
            {"text": "done"},
        ]
    )


async def test_one_trace_per_run_with_chat_and_tool_spans(make_runtime, traced) -> None:
    t = traced()
    rt = make_runtime(
        model=turns(), tools=[lookup, explode, dispatch], plugins=[t.plugin, Dispatcher()], id="weather-bot"
    )
    outcome = await rt.session().run("weather in Oslo?")
    assert outcome.stop_reason == "final"
    spans = t.finished()
    (root,) = [s for s in spans if s.name == "invoke_agent weather-bot"]
    assert {s.context.trace_id for s in spans} == {root.context.trace_id}  # one trace for the run
    assert root.parent is None and root.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert root.attributes["greenroom.run.stop_reason"] == "final" and root.attributes["greenroom.run.steps"] == 3

    chats = [s for s in spans if s.name.startswith("chat ")]
    assert [c.attributes["greenroom.step"] for c in chats] == [1, 2, 3]
    assert all(c.parent.span_id == root.context.span_id and c.kind is SpanKind.CLIENT for c in chats)
    last = chats[-1].attributes
    assert last["gen_ai.usage.input_tokens"] == 120 and last["gen_ai.usage.output_tokens"] == 7
    assert last["gen_ai.usage.cache_read.input_tokens"] == 100
    assert last["greenroom.request.tools"] == 3 and len(last["greenroom.request.prefix_hash"]) >= 8

    tools = {s.name: s for s in spans if s.name.startswith("execute_tool ")}
    assert set(tools) == {"execute_tool lookup", "execute_tool explode", "execute_tool nope"}
    real = tools["execute_tool lookup"].attributes  # the dispatcher unwrapped: the real tool
    assert real["gen_ai.tool.name"] == "lookup" and real["greenroom.tool.requested"] == "dispatch"
    assert real["gen_ai.tool.call.id"].startswith("call_") and "error.type" not in real
    failed = tools["execute_tool explode"]
    assert failed.attributes["error.type"] == "tool_error" and failed.status.status_code is StatusCode.ERROR
    refused = tools["execute_tool nope"]  # refused before the gates: a span all the same
    assert refused.attributes["error.type"] == "unknown_tool"
    assert all(s.parent.span_id == root.context.span_id for s in tools.values())
    # no content unless asked
    assert not any(
        k.startswith(("gen_ai.input", "gen_ai.output", "gen_ai.tool.call.a", "gen_ai.tool.call.r"))
        for s in spans
        for k in s.attributes
    )


async def test_content_is_captured_only_when_asked_and_masked(make_runtime, traced) -> None:
    from greenroom._support.redact import remember_secrets

    remember_secrets([API_KEY])  # what a provider does with its key: a secret in any text
    t = traced(capture_content=True)
    script = [
        {
            "tool_calls": [
                {"name": "lookup", "arguments": {"city": SECRET}},
                {"name": "lookup", "arguments": {"city": API_KEY}},
            ]
        },
        {"text": f"key {SECRET}"},
    ]
    rt = make_runtime(script, tools=[lookup], plugins=[t.plugin])
    rt.secrets.add(SECRET)  # a secret of the runtime's (an MCP server's token): masked in results and text
    await rt.session().run("hello")
    spans = t.finished()
    calls = [s for s in spans if s.name == "execute_tool lookup"]
    assert sorted(c.attributes["gen_ai.tool.call.result"] for c in calls) == ["***: sunny", "***: sunny"]
    assert {"city": "***"} in [json.loads(c.attributes["gen_ai.tool.call.arguments"]) for c in calls]
    assert all(API_KEY not in json.dumps(dict(s.attributes)) for s in spans)
    (chat,) = [
        s for s in spans if s.name.startswith("chat ") and "stop" in s.attributes["gen_ai.response.finish_reasons"]
    ]
    assert "key ***" in chat.attributes["gen_ai.output.messages"]
    (root,) = [s for s in spans if s.name.startswith("invoke_agent")]
    assert "hello" in root.attributes["gen_ai.input.messages"]


async def test_metrics_count_tokens_durations_errors_and_searches(make_runtime, traced) -> None:
    t = traced()
    rt = make_runtime(model=turns(), tools=[lookup, explode, dispatch], plugins=[t.plugin, Dispatcher()])
    await rt.session().run("go")
    points = t.metric_points()
    usage = {p.attributes["gen_ai.token.type"]: p.sum for p in points["gen_ai.client.token.usage"]}
    assert (usage["input"], usage["output"]) == (3 * 120, 3 * 7)
    ops = {p.attributes["gen_ai.operation.name"] for p in points["gen_ai.client.operation.duration"]}
    assert ops == {"chat", "execute_tool"}
    errors = {p.attributes["error.type"]: p.value for p in points["greenroom.tool_call.errors"]}
    assert errors == {"tool_error": 1, "unknown_tool": 1}
    (searches,) = points["greenroom.run.searches"]
    assert searches.count == 1 and searches.sum == 0  # one run, no search in it


async def test_a_client_run_has_no_agent_span_and_its_calls_hang_under_the_current_span(make_runtime, traced) -> None:
    from opentelemetry import context as otel_context
    from opentelemetry import trace

    t = traced()
    rt = make_runtime([], tools=[lookup], plugins=[t.plugin])
    run = rt.start_run(kind=RunKind.CLIENT)
    await run.start()
    await run.next_request()
    outer = t.plugin.telemetry.tracer.start_span("outer")  # what a gateway's server span is
    token = otel_context.attach(trace.set_span_in_context(outer))
    try:
        await run.call_tool(run.take_client_call("lookup", {"city": "Rome"}))
    finally:
        otel_context.detach(token)
        outer.end()
    await run.end(run.outcome_of("final"))
    spans = t.finished()
    assert not [s for s in spans if s.name.startswith(("invoke_agent", "chat"))]
    (call,) = [s for s in spans if s.name == "execute_tool lookup"]
    assert call.parent.span_id == outer.get_span_context().span_id


async def test_a_preview_is_not_traced(make_runtime, traced) -> None:
    t = traced()
    rt = make_runtime([], tools=[lookup], plugins=[t.plugin])
    await rt.preview()
    assert t.plugin.telemetry is None  # nothing was even set up


async def test_a_group_loaded_for_a_call_is_a_tool_span_with_the_group(traced) -> None:
    from greenroom import make_plugin_host
    from greenroom.run.runtime import Runtime
    from greenroom.tools.groups import ToolGroup

    async def load() -> list[Any]:
        return [lookup]

    group = ToolGroup(
        id="weather", name="weather", description="Weather tools.", loader=load, known=[lookup.descriptor]
    )
    t = traced()
    script = [{"tool_calls": [{"name": "lookup", "arguments": {"city": "Oslo"}}]}, {"text": "done"}]
    rt = Runtime(model=ScriptedModel(script), host=make_plugin_host(records=[], extra=[t.plugin]), groups=[group])
    outcome = await rt.session().run("weather?")
    assert outcome.stop_reason == "final"
    spans = t.finished()
    (root,) = t.named("invoke_agent")
    (load_span,) = [s for s in spans if s.name == "execute_tool load_group weather"]
    assert (
        load_span.attributes["greenroom.group.id"] == "weather" and load_span.attributes["greenroom.group.tools"] == 1
    )
    assert load_span.parent.span_id == root.context.span_id
    (call,) = [s for s in spans if s.name == "execute_tool lookup"]
    assert call.attributes["greenroom.tool.group"] == "weather" and "error.type" not in call.attributes


async def test_a_failing_hook_of_the_plugin_never_fails_the_run(make_runtime, traced, monkeypatch, caplog) -> None:
    import logging

    from greenroom_otel import spans

    def broken(*args: Any) -> None:
        raise RuntimeError("mapping bug")

    monkeypatch.setattr(spans.RunSpans, "open_tool", broken)
    monkeypatch.setitem(spans._HANDLERS, "response", broken)
    caplog.set_level(logging.WARNING, logger="greenroom.otel")
    t = traced()
    rt = make_runtime(model=turns(), tools=[lookup, explode, dispatch], plugins=[t.plugin, Dispatcher()])
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final"
    results = [m for m in session.messages if m.role == "tool"]
    assert [m.is_error for m in results] == [False, True, True] and results[0].content == "Oslo: sunny"
    warned = [r.getMessage() for r in caplog.records if "mapping bug" in r.getMessage()]
    assert len(warned) == 2  # once per hook, not once per call
    assert t.named("invoke_agent")  # what did not fail is still traced


async def test_a_runs_spans_live_in_the_run_and_go_with_it(make_runtime, traced) -> None:
    from greenroom_otel.run_state import OtelRun

    t = traced()
    rt = make_runtime([], tools=[lookup], plugins=[t.plugin])
    runs = [rt.start_run(kind=RunKind.CLIENT) for _ in range(3)]
    for run in runs:
        await run.start()  # and never ended: a gateway's callers that went away
    assert all(run.ctx.state[OtelRun].trace is not None for run in runs)
    # one plugin serves every run: what it holds does not grow with the runs it has seen
    held = {name: value for name, value in vars(t.plugin._spans).items() if hasattr(value, "__len__")}
    assert all(len(value) == 0 or isinstance(value, str) for value in held.values()), held
