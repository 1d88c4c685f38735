"""Anthropic's deferred loading answered by greenroom's own search (``[model] tool_search
= "client"``): the deferred tools go with ``defer_loading`` after greenroom's search
tool (a client tool with the tools breakpoint, none on a deferred tool); the model's
search is an ordinary call of ``CLIENT_SEARCH_TOOL``; its result goes back as
``tool_reference`` blocks naming the deferred tools it found, which the API loads; and
the prefix stays one hash over the session."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from typing import Any

import pytest
from support.fake_llm_server import (
    ANTHROPIC_KEY_ENV,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    strip_cache_control,
    top_level_raw,
)

from greenroom import events as ev
from greenroom.compose.build import build_model
from greenroom.config import AgentConfig
from greenroom.models import Message, ModelRequest, SystemSection, ToolCall
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers._messages import CLIENT_SEARCH_TOOL, SEARCH_DESCRIPTION, SEARCH_PARAMETERS
from greenroom.run.runtime import Runtime
from greenroom.tokens.accounting import RequestAccounting
from greenroom.tools import ToolDescriptor, tool
from greenroom_anthropic import AnthropicProvider
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.events import SearchPerformed

pytestmark = pytest.mark.anyio

EPHEMERAL = {"type": "ephemeral"}
ADD = ToolDescriptor("add", "Add two integers.", {"type": "object", "properties": {"a": {"type": "integer"}}})
WEATHER = ToolDescriptor(
    "weather_get", "Get the weather for a city.", {"type": "object", "properties": {"city": {"type": "string"}}}
)
STOCKS = ToolDescriptor("stocks_get", "Get a stock quote.")
DEFERRED = frozenset({"weather_get", "stocks_get"})
SEARCH = {"name": CLIENT_SEARCH_TOOL, "description": SEARCH_DESCRIPTION, "input_schema": SEARCH_PARAMETERS}
OK = anthropic_message([{"type": "text", "text": "ok"}])


def found(*tools: ToolDescriptor, hint: str = "Call them by name.") -> str:
    """A search's answer as the deferred-tools plugin writes it (a ``<functions>`` block)."""
    lines = [f"<function>{json.dumps(t.to_json(), sort_keys=True)}</function>" for t in tools]
    return "\n".join(["<functions>", *lines, "</functions>", hint])


def search_call(call_id: str, query: str) -> Message:
    return Message("assistant", "", tool_calls=(ToolCall(call_id, CLIENT_SEARCH_TOOL, {"query": query}),))


FIRST = (Message("user", "weather in Oslo, and add 1"),)
HISTORY = (
    *FIRST,
    search_call("toolu_1", "weather city"),
    Message("tool", found(WEATHER, ADD), tool_call_id="toolu_1", name=CLIENT_SEARCH_TOOL),
    Message("assistant", "", tool_calls=(ToolCall("toolu_2", "weather_get", {"city": "Oslo"}),)),
    Message("tool", "rain", tool_call_id="toolu_2", name="weather_get"),
    search_call("toolu_3", "add numbers"),
    Message("tool", found(ADD), tool_call_id="toolu_3", name=CLIENT_SEARCH_TOOL),  # only a loaded tool
    search_call("toolu_4", "((("),
    Message("tool", "bad query", tool_call_id="toolu_4", name=CLIENT_SEARCH_TOOL, is_error=True),
    Message("assistant", "", tool_calls=(ToolCall("toolu_5", "add", {"a": 1}),)),
    Message("tool", found(STOCKS), tool_call_id="toolu_5", name="add"),  # not a search's result
)


def request(messages: tuple[Message, ...], step: int = 1) -> ModelRequest:
    return ModelRequest(
        system=(SystemSection("agent", "You are terse."),),
        tools=(ADD, WEATHER, STOCKS),
        messages=messages,
        step=step,
        deferred=DEFERRED,
    )


@pytest.fixture
def make(make_anthropic: Callable[..., Any]) -> Callable[..., Any]:
    return lambda **kw: make_anthropic(tool_search="client", **kw)


async def test_deferred_tools_follow_greenroom_s_search_tool(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    model = make()
    assert model.native_tool_search is True  # the deferred-tools plugin defers to it
    await model.complete(request(FIRST))
    (rec,) = server.requests
    assert rec.body["tools"] == [
        {"name": "add", "description": ADD.description, "input_schema": dict(ADD.parameters)},
        {**SEARCH, "cache_control": EPHEMERAL},  # a client tool, always loaded
        {"name": "weather_get", "description": WEATHER.description, "input_schema": dict(WEATHER.parameters)}
        | {"defer_loading": True},
        {"name": "stocks_get", "description": STOCKS.description, "input_schema": {"type": "object"}}
        | {"defer_loading": True},
    ]
    assert "anthropic-beta" not in rec.headers  # tool_reference is in the GA Messages API


async def test_search_results_load_the_deferred_tools_they_found(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(Reply(body=OK))
    await make().complete(request(HISTORY, step=6))
    messages = server.requests[0].body["messages"]
    results = {b["tool_use_id"]: b for m in messages if m["role"] == "user" for b in m["content"] if "tool_use_id" in b}
    # the deferred tool it found, by reference; add is loaded already, so left out
    assert results["toolu_1"]["content"] == [{"type": "tool_reference", "tool_name": "weather_get"}]
    assert results["toolu_1"]["is_error"] is False
    # found nothing deferred, failed, or not a search at all: the text as it was
    assert results["toolu_3"]["content"] == found(ADD)
    assert (results["toolu_4"]["content"], results["toolu_4"]["is_error"]) == ("bad query", True)
    assert results["toolu_5"]["content"] == found(STOCKS)
    assert messages[1]["content"] == [
        {"type": "tool_use", "id": "toolu_1", "name": CLIENT_SEARCH_TOOL, "input": {"query": "weather city"}}
    ]


async def test_other_modes_send_search_results_as_text(
    server: FakeLLMServer, make_anthropic: Callable[..., Any]
) -> None:
    for _ in range(2):
        server.push(Reply(body=OK))
    await make_anthropic().complete(request(HISTORY, step=6))  # hosted search: no tool_reference of greenroom's
    await make_anthropic(tool_search="off").complete(request(HISTORY, step=6))
    for rec in server.requests:
        assert "tool_reference" not in json.dumps(rec.body["messages"])


async def test_the_model_s_search_is_an_ordinary_call(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(
        Reply(
            body=anthropic_message(
                [
                    {"type": "text", "text": "Searching."},
                    {"type": "tool_use", "id": "toolu_9", "name": CLIENT_SEARCH_TOOL, "input": {"query": "stock"}},
                ]
            )
        )
    )
    response = await make().complete(request(FIRST))
    assert response.tool_calls == (ToolCall("toolu_9", CLIENT_SEARCH_TOOL, {"query": "stock"}),)
    assert response.message.provider_content is None and response.searches == ()  # greenroom's search reports itself


async def test_the_prefix_is_one_hash_and_the_history_only_grows(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    for _ in range(3):
        server.push(Reply(body=OK))
    model = make()
    steps = [request(FIRST), request(HISTORY[:5], step=3), request(HISTORY, step=6)]
    for r in steps:
        await model.complete(r)
    raws = [json.loads(rec.raw) for rec in server.requests]
    assert all(r["tools"] == raws[0]["tools"] and r["system"] == raws[0]["system"] for r in raws)
    breakpoints = [[i for i, t in enumerate(r["tools"]) if "cache_control" in t] for r in raws]
    assert breakpoints == [[1], [1], [1]]  # on the search tool, never on a deferred tool
    # the trace's accounting agrees: one prefix hash, the deferred tools' tokens not counted
    accounting = RequestAccounting()
    sent = [accounting.describe_request(r, hosted_search=model.native_tool_search) for r in steps]
    assert len({s.prefix_hash for s in sent}) == 1
    assert sent[0].deferred_tools == ("weather_get", "stocks_get")
    everything = RequestAccounting().describe_request(steps[0])
    assert sent[0].tools_tokens < everything.tools_tokens
    # and each request's history starts with the previous one's
    histories = [json.dumps(strip_cache_control(r["messages"])) for r in raws]
    for before, after in itertools.pairwise(histories):
        assert after.startswith(before[:-1])


# ----------------------------------------------------------------------------- end to end


def catalog_tool(name: str) -> Any:
    def impl(city: str = "") -> str:
        return f"{name}({city})"

    topic, verb = name.split("_")
    return tool(impl, name=name, description=f"{verb.capitalize()} {topic} records for the account, with filters.")


def client_responder(rec: Recorded) -> Reply:
    step = sum(1 for m in rec.body["messages"] if m["role"] == "assistant")
    if step == 0:
        blocks = [{"type": "tool_use", "id": "toolu_s1", "name": CLIENT_SEARCH_TOOL, "input": {"query": "weather"}}]
    elif step == 1:
        blocks = [{"type": "tool_use", "id": "toolu_w1", "name": "weather_get", "input": {"city": "Oslo"}}]
    else:
        blocks = [{"type": "text", "text": "Rain in Oslo."}]
    return Reply(body=anthropic_message(blocks, cache_read=500 * step))


async def test_a_run_searches_with_greenroom_and_the_api_loads_what_it_found(server: FakeLLMServer) -> None:
    server.responder = client_responder
    host = make_plugin_host(
        records=[],
        extra=[
            AnthropicProvider(),
            DeferredToolsPlugin(DeferredConfig(strategy="native", enabled=True, never_defer=("email_get",))),
        ],
    )
    options = {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV, "tool_search": "client"}
    model = build_model("anthropic:claude-test", options, host)
    topics = ("weather", "calendar", "email", "billing", "github", "slack")
    tools = [catalog_tool(f"{t}_{v}") for t in topics for v in ("get", "list", "create")]
    runtime = Runtime(model=model, tools=tools, host=host, agent=AgentConfig(system_prompt="You help.", max_steps=4))
    events: list[ev.Event] = []
    runtime.events.subscribe(events.append)
    session = runtime.session()
    try:
        outcome = await session.run("weather in Oslo?")
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text) == ("final", "Rain in Oslo.")

    first, second, third = (r.body for r in server.requests)
    by_name = {t["name"]: t for t in first["tools"]}
    deferred = {n for n, t in by_name.items() if t.get("defer_loading")}
    assert by_name[CLIENT_SEARCH_TOOL] == {**SEARCH, "cache_control": EPHEMERAL}
    assert "email_get" not in deferred and "weather_get" in deferred
    assert [t["name"] for t in first["tools"] if "cache_control" in t] == [CLIENT_SEARCH_TOOL]
    # greenroom's search answered; the API gets references to the deferred tools it found
    search_result = second["messages"][2]["content"][0]
    assert search_result["tool_use_id"] == "toolu_s1"
    refs = [b["tool_name"] for b in search_result["content"]]
    assert all(b["type"] == "tool_reference" for b in search_result["content"])
    assert "weather_get" in refs and set(refs) <= deferred
    (searched,) = [e for e in events if isinstance(e, SearchPerformed)]
    assert searched.query == "weather" and [name for name, _ in searched.results] == refs
    # the tool it loaded ran like any other
    ran = third["messages"][4]["content"][0]
    assert (ran["tool_use_id"], ran["content"], ran["is_error"]) == ("toolu_w1", "weather_get(Oslo)", False)
    # one prefix over the session: the same bytes, and one hash in the trace
    prefixes = [(t["tools"], t["system"]) for t in (top_level_raw(r.raw) for r in server.requests)]
    assert all(p == prefixes[0] for p in prefixes)
    hashes = {e.prefix_hash for e in events if isinstance(e, ev.RequestSent)}
    assert len(hashes) == 1
