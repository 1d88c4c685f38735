"""OpenAI's tool search in client execution mode: deferred tools are sent with
``defer_loading`` in namespaces per group, behind ``tool_search``; the model's
``tool_search_call`` is answered by greenroom's own search (the deferred-tools plugin's
``native`` strategy) and goes back as ``tool_search_output`` with the definitions found;
the tools array and instructions are the same bytes on every request, across a resume,
and the trace's prefix hash is one. A model without the feature falls back to dispatch."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm_server import OPENAI_KEY_ENV, FakeLLMServer, Recorded, Reply, responses_object, top_level_raw

from greenroom import events as ev
from greenroom import tool
from greenroom.compose.build import build_model
from greenroom.config import AgentConfig
from greenroom.models import Message, ModelRequest, ToolCall
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers._messages import CLIENT_SEARCH_TOOL, SEARCH_DESCRIPTION, SEARCH_PARAMETERS
from greenroom.run.runtime import Runtime
from greenroom.tools import ToolDescriptor
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.descriptors import CLIENT_SEARCH_CALL, SEARCH_TOOL, search_descriptor
from greenroom_deferred.events import SearchPerformed
from greenroom_openai import OpenAIProvider

pytestmark = pytest.mark.anyio

PARAMS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
SEARCH = {
    "type": "tool_search",
    "execution": "client",
    "description": SEARCH_DESCRIPTION,
    "parameters": SEARCH_PARAMETERS,
}


def fn(d: ToolDescriptor, **extra: Any) -> dict[str, Any]:
    return {
        "type": "function",
        "name": d.name,
        "description": d.description,
        "parameters": dict(d.parameters),
        "strict": False,
        **extra,
    }


def test_the_plugin_and_the_providers_agree_on_the_search_call() -> None:
    assert CLIENT_SEARCH_CALL == CLIENT_SEARCH_TOOL
    # what the provider's search tool takes, ToolSearch takes: the resolved call validates
    plugin = search_descriptor(5).parameters
    assert set(SEARCH_PARAMETERS["properties"]) <= set(plugin["properties"])
    assert SEARCH_PARAMETERS["required"] == plugin["required"]


# ----------------------------------------------------------------------------- wire

EAGER = ToolDescriptor("email_get", "Get an email.", PARAMS)
W_GET = ToolDescriptor("weather_get", "Get the weather.", PARAMS, group="weather")
W_LIST = ToolDescriptor("weather_list", "List stations.", PARAMS, group="weather")
LONE = ToolDescriptor("stocks_get", "Get a stock quote.", PARAMS)
DEFERRED = frozenset({"weather_get", "weather_list", "stocks_get"})


def request(
    messages: tuple[Message, ...] = (Message("user", "weather?"),), deferred: frozenset[str] = DEFERRED
) -> ModelRequest:
    return ModelRequest(system=(), tools=(W_GET, EAGER, LONE, W_LIST), messages=messages, deferred=deferred)


async def test_deferred_tools_go_behind_tool_search_in_namespaces(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(body=responses_object([])))
    model = make_openai(api="responses", tool_search=True)
    assert model.native_tool_search is True
    await model.complete(request())
    assert server.requests[0].body["tools"] == [
        fn(EAGER),
        SEARCH,
        {
            "type": "namespace",
            "name": "weather",
            "description": "2 tools of weather, loaded by tool search.",
            "tools": [fn(W_GET, defer_loading=True), fn(W_LIST, defer_loading=True)],
        },
        fn(LONE, defer_loading=True),
    ]


async def test_one_tool_stays_loaded_and_nothing_deferred_sends_no_search(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(body=responses_object([])), Reply(body=responses_object([])))
    model = make_openai(api="responses", tool_search=True)
    everything = frozenset({"weather_get", "email_get", "stocks_get", "weather_list"})
    await model.complete(request(deferred=everything))
    await model.complete(request(deferred=frozenset()))
    all_deferred, none = (r.body["tools"] for r in server.requests)
    assert all_deferred[:2] == [fn(W_GET), SEARCH]  # the API rejects a request that defers every tool
    assert none == [fn(W_GET), fn(EAGER), fn(LONE), fn(W_LIST)]


SEARCH_CALL = {
    "type": "tool_search_call",
    "id": "tsc_1",
    "call_id": "call_s1",
    "execution": "client",
    "arguments": {"query": "weather"},
    "status": "completed",
}


async def test_a_search_call_is_a_call_and_its_result_loads_what_it_found(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(body=responses_object([SEARCH_CALL])), Reply(body=responses_object([])))
    model = make_openai(api="responses", tool_search=True)
    first = await model.complete(request())
    (call,) = first.tool_calls
    assert call == ToolCall("call_s1", CLIENT_SEARCH_TOOL, {"query": "weather"}, '{"query": "weather"}')
    assert first.searches == ()  # greenroom searches, not the API: no hosted search to report
    found = "\n".join(
        [
            "<functions>",
            *(f"<function>{json.dumps(d.to_json(), sort_keys=True)}</function>" for d in (W_GET, EAGER)),
            "</functions>",
            "Callable now.",
        ]
    )
    history = (
        Message("user", "weather?"),
        first.message,
        Message("tool", found, tool_call_id="call_s1", name=SEARCH_TOOL),
    )
    await model.complete(request(history))
    assert server.requests[1].body["input"][1:] == [
        {"type": "tool_search_call", "call_id": "call_s1", "execution": "client", "arguments": {"query": "weather"}},
        {
            "type": "tool_search_output",
            "call_id": "call_s1",
            "execution": "client",
            # only the deferred tool found is loaded, in its namespace (email_get is loaded already)
            "tools": [
                {
                    "type": "namespace",
                    "name": "weather",
                    "description": "2 tools of weather, loaded by tool search.",
                    "tools": [fn(W_GET)],
                }
            ],
        },
    ]


# ----------------------------------------------------------------------------- end to end


def weather_tool(name: str) -> Any:
    def impl(city: str) -> str:
        return f"{name}({city})"

    topic, verb = name.split("_")
    return tool(
        impl, name=name, group=topic, description=f"{verb.capitalize()} {topic} records for a city, with filters."
    )


TOOLS = [
    weather_tool(f"{t}_{v}")
    for t in ("weather", "calendar", "email", "github", "slack")
    for v in ("get", "list", "create")
]


def responder(rec: Recorded) -> Reply:
    done = sum(1 for i in rec.body["input"] if i.get("type") in ("tool_search_output", "function_call_output"))
    if done == 0:
        return Reply(body=responses_object([{**SEARCH_CALL, "call_id": f"call_s{done}"}], cached_tokens=1024))
    call = {
        "type": "function_call",
        "id": f"fc_{done}",
        "call_id": f"call_w{done}",
        "namespace": "weather",
        "name": "weather_get",
        "arguments": '{"city": "Oslo"}',
        "status": "completed",
    }
    if done == 1:
        return Reply(body=responses_object([call]))
    return Reply(body=responses_object([text_item("Rain.")]))


def text_item(text: str) -> dict[str, Any]:
    content = [{"type": "output_text", "text": text, "annotations": []}]
    return {"type": "message", "id": "msg_1", "role": "assistant", "status": "completed", "content": content}


def make_runtime(server: FakeLLMServer, **model: Any) -> tuple[Runtime, Any, list[ev.Event]]:
    plugin = DeferredToolsPlugin(DeferredConfig(strategy="native", enabled=True, never_defer=("email_get",)))
    host = make_plugin_host(records=[], extra=[OpenAIProvider(), plugin])
    options = {
        "base_url": server.url + "/v1",
        "api_key_env": OPENAI_KEY_ENV,
        "api": "responses",
        "tool_search": True,
        **model,
    }
    built = build_model("openai:gpt-5.4", options, host)
    runtime = Runtime(model=built, tools=TOOLS, host=host, agent=AgentConfig(system_prompt="You help.", max_steps=6))
    events: list[ev.Event] = []
    runtime.events.subscribe(events.append)
    return runtime, built, events


async def test_native_search_end_to_end_keeps_one_prefix_across_a_resume(server: FakeLLMServer, tmp_path: Path) -> None:
    server.responder = responder
    runtime, model, events = make_runtime(server)
    session = runtime.session()
    try:
        outcome = await session.run("weather in Oslo?")
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text) == ("final", "Rain.")
    st = session.state[DeferralState]
    assert st.strategy == "native" and "weather_get" in st.discovered
    _, second, third = server.requests
    # greenroom's own ranking answered the model's search, and the result loaded the tool
    (searched,) = [e for e in events if isinstance(e, SearchPerformed)]
    assert (searched.query, searched.mode) == ("weather", "keywords")
    assert {"weather_get", "weather_list"} <= {name for name, _ in searched.results}
    output = second.body["input"][2]
    assert output["type"] == "tool_search_output" and output["call_id"] == "call_s0"
    loaded = [t["name"] for space in output["tools"] for t in space.get("tools", [space])]
    assert "weather_get" in loaded and "email_get" not in loaded  # email_get was never deferred
    # the found tool ran like any other, and its call is replayed with its namespace
    assert third.body["input"][3] == {
        "type": "function_call",
        "call_id": "call_w1",
        "namespace": "weather",
        "name": "weather_get",
        "arguments": '{"city": "Oslo"}',
    }
    assert third.body["input"][4] == {
        "type": "function_call_output",
        "call_id": "call_w1",
        "output": "weather_get(Oslo)",
    }
    assert not [e for e in events if isinstance(e, ev.PluginWarning)]

    # resumed in a new runtime: the search turn comes back from the session and is replayed
    path = session.save(tmp_path / "s.json")
    runtime2, model2, events2 = make_runtime(server)
    resumed = runtime2.load_session(path)
    try:
        await resumed.run("and tomorrow?")
    finally:
        await model2.aclose()
    for rec in server.requests[1:]:
        assert rec.body["input"][1]["type"] == "tool_search_call"
    # the prefix is the same bytes on every request, and the trace says one hash
    prefixes = [(t["tools"], t["instructions"]) for t in (top_level_raw(r.raw) for r in server.requests)]
    assert len(prefixes) == 4 and all(p == prefixes[0] for p in prefixes)
    sent = [e for e in events + events2 if isinstance(e, ev.RequestSent)]
    assert len({e.prefix_hash for e in sent}) == 1
    assert set(sent[0].deferred_tools) == set(st.deferred())


async def test_without_the_feature_native_works_as_dispatch_and_says_so(server: FakeLLMServer) -> None:
    server.push(Reply(body=responses_object([text_item("Hi.")])))
    runtime, model, events = make_runtime(server, tool_search="auto")  # another server: auto is off
    try:
        await runtime.session().run("hi")
    finally:
        await model.aclose()
    names = [t["name"] for t in server.requests[0].body["tools"]]
    assert SEARCH_TOOL in names and "tool_search" not in json.dumps(names)
    (warning,) = [e for e in events if isinstance(e, ev.PluginWarning)]
    assert "gpt-5.4 and later through the Responses API" in warning.message
