"""Anthropic's hosted tool search through greenroom: the request marks exactly the
deferred tools with ``defer_loading`` and adds the search tool (with the tools
breakpoint, never on a deferred tool); a response in which the API searched keeps its
``server_tool_use`` / ``tool_search_tool_result`` blocks and replays them verbatim; a
real runtime with the deferred-tools plugin's ``native`` strategy keeps the prefix
byte-identical, scopes and places tools, runs the loaded tool, and a saved session
resumes with the raw blocks."""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
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

from greenroom import Plugin, ToolPriors, hookimpl
from greenroom import events as ev
from greenroom.compose.build import build_model
from greenroom.config import AgentConfig, ConfigError
from greenroom.models import Message, ModelRequest, ProviderContent, SystemSection, ToolCall
from greenroom.plugins.discovery import make_plugin_host
from greenroom.run.runtime import Runtime
from greenroom.tools import ToolDescriptor, tool
from greenroom_anthropic import AnthropicProvider, make_anthropic_model
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.events import SearchPerformed

pytestmark = pytest.mark.anyio

EPHEMERAL = {"type": "ephemeral"}
BM25 = {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"}
REGEX = {"type": "tool_search_tool_regex_20251119", "name": "tool_search_tool_regex"}
ADD = ToolDescriptor(
    "add",
    "Add two integers.",
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
)
NOW = ToolDescriptor("now", "The current time.")
WEATHER = ToolDescriptor(
    "weather_get", "Get the weather for a city.", {"type": "object", "properties": {"city": {"type": "string"}}}
)
STOCKS = ToolDescriptor("stocks_get", "Get a stock quote.")

# What the API sends back when the model searched and then called what it found: the
# shapes of anthropic.types ServerToolUseBlock, ToolSearchToolResultBlock (content a
# ToolSearchToolSearchResultBlock of ToolReferenceBlocks) and ToolUseBlock.
SEARCH_TURN: list[dict[str, Any]] = [
    {"type": "text", "text": "Let me find a weather tool.", "citations": None},
    {
        "type": "server_tool_use",
        "id": "srvtoolu_01",
        "name": "tool_search_tool_bm25",
        "input": {"query": "weather city forecast"},
    },
    {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_01",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "weather_get"}],
        },
    },
    {"type": "tool_use", "id": "toolu_02", "name": "weather_get", "input": {"city": "Oslo"}},
]


@pytest.fixture
def make(make_anthropic: Callable[..., Any]) -> Callable[..., Any]:
    return make_anthropic


def request(deferred: frozenset[str] = frozenset({"weather_get", "stocks_get"}), **kw: Any) -> ModelRequest:
    return ModelRequest(
        system=(SystemSection("agent", "You are terse."),),
        tools=(ADD, WEATHER, NOW, STOCKS),
        messages=(Message("user", "weather in Oslo?"),),
        step=1,
        deferred=deferred,
        **kw,
    )


# ----------------------------------------------------------------------------- request


async def test_deferred_tools_get_defer_loading_and_the_search_tool_takes_the_breakpoint(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    model = make()
    assert model.native_tool_search is True
    await model.complete(request())
    (rec,) = server.requests
    add, now = ({"name": d.name, "description": d.description, "input_schema": dict(d.parameters)} for d in (ADD, NOW))
    assert rec.body["tools"] == [
        add,
        now,
        {**BM25, "cache_control": EPHEMERAL},
        {
            "name": "weather_get",
            "description": WEATHER.description,
            "input_schema": dict(WEATHER.parameters),
            "defer_loading": True,
        },
        {
            "name": "stocks_get",
            "description": STOCKS.description,
            "input_schema": dict(STOCKS.parameters),
            "defer_loading": True,
        },
    ]
    assert "anthropic-beta" not in rec.headers  # tool search is in the GA Messages API types


async def test_regex_variant_betas_header_and_no_deferral_without_deferred_tools(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    for _ in range(2):
        server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    model = make(tool_search="regex", betas=["advanced-tool-use-2025-11-20"])
    await model.complete(request())
    await model.complete(request(deferred=frozenset()))
    first, second = server.requests
    assert first.headers["anthropic-beta"] == "advanced-tool-use-2025-11-20"
    assert {**REGEX, "cache_control": EPHEMERAL} in first.body["tools"]
    # nothing deferred: no search tool, no defer_loading, the breakpoint on the last tool
    assert [t["name"] for t in second.body["tools"]] == ["add", "weather_get", "now", "stocks_get"]
    assert not any("defer_loading" in t for t in second.body["tools"])
    assert second.body["tools"][-1]["cache_control"] == EPHEMERAL


async def test_tool_search_off_sends_every_tool_in_full(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    model = make(tool_search="off")
    assert model.native_tool_search is False
    await model.complete(request())
    tools = server.requests[0].body["tools"]
    assert [t["name"] for t in tools] == ["add", "weather_get", "now", "stocks_get"]
    assert not any("defer_loading" in t or t.get("type") for t in tools)


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"tool_search": "fuzzy"}, "model.tool_search"),
        ({"betas": "a-beta"}, "model.betas"),
        ({"betas": [1]}, "model.betas"),
    ],
)
def test_bad_tool_search_options_name_the_key(options: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_anthropic_model("claude-test", {"api_key_env": ANTHROPIC_KEY_ENV, **options})
    assert info.value.path == path


# ----------------------------------------------------------------------------- response


async def test_a_search_turn_is_parsed_kept_and_replayed_verbatim(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(
        Reply(body=anthropic_message(SEARCH_TURN)), Reply(body=anthropic_message([{"type": "text", "text": "ok"}]))
    )
    model = make()
    response = await model.complete(request())
    msg = response.message
    assert msg.content == "Let me find a weather tool."
    assert msg.tool_calls == (ToolCall("toolu_02", "weather_get", {"city": "Oslo"}),)
    assert msg.provider_content == ProviderContent("anthropic", tuple(SEARCH_TURN))
    (search,) = response.searches
    assert (search.query, search.tools, search.error) == ("weather city forecast", ("weather_get",), None)

    follow = attrs.evolve(
        request(),
        messages=(*request().messages, msg, Message("tool", "rain", tool_call_id="toolu_02", name="weather_get")),
        step=2,
    )
    await model.complete(follow)
    messages = server.requests[1].body["messages"]
    assert messages[1] == {"role": "assistant", "content": SEARCH_TURN}  # as the API sent it
    assert messages[2]["content"][0]["tool_use_id"] == "toolu_02"
    # the breakpoints went on copies: the stored blocks are untouched
    assert msg.provider_content is not None and "cache_control" not in json.dumps(msg.provider_content.blocks)


async def test_plain_turns_keep_no_raw_blocks_and_search_errors_are_reported(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    failed = [
        {"type": "server_tool_use", "id": "srvtoolu_9", "name": "tool_search_tool_regex", "input": {"query": "(("}},
        {
            "type": "tool_search_tool_result",
            "tool_use_id": "srvtoolu_9",
            "content": {"type": "tool_search_tool_result_error", "error_code": "invalid_tool_input"},
        },
        {"type": "text", "text": "That pattern was wrong."},
    ]
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "hi"}])), Reply(body=anthropic_message(failed)))
    model = make()
    plain = await model.complete(request())
    assert plain.message.provider_content is None and plain.searches == ()
    errored = await model.complete(request())
    (search,) = errored.searches
    assert (search.query, search.tools, search.error) == ("((", (), "invalid_tool_input")
    assert errored.message.provider_content is not None


async def test_other_providers_raw_blocks_are_not_replayed(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    foreign = Message("assistant", "from elsewhere", provider_content=ProviderContent("openai", ({"type": "x"},)))
    await make().complete(attrs.evolve(request(), messages=(Message("user", "hi"), foreign, Message("user", "again"))))
    assert server.requests[0].body["messages"][1]["content"] == [{"type": "text", "text": "from elsewhere"}]


# ----------------------------------------------------------------------------- end to end


def catalog_tool(name: str) -> Any:
    def impl(city: str = "") -> str:
        return f"{name}({city})"

    verb, topic = name.split("_")[1], name.split("_")[0]
    return tool(impl, name=name, description=f"{verb.capitalize()} {topic} records for the account, with filters.")


def make_tools() -> list[Any]:
    topics = ("weather", "calendar", "email", "billing", "github", "slack")
    return [catalog_tool(f"{topic}_{verb}") for topic in topics for verb in ("get", "list", "create")]


class Scoping(Plugin):
    """Hides billing tools and gives slack_get a high learned use probability."""

    name = "scoping"

    @hookimpl
    def greenroom_hidden_tools(self, ctx: Any, tools: Any) -> list[str]:
        return [t.name for t in tools if t.name.startswith("billing_")]

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        ctx.profile_state.set(
            ToolPriors(p={"slack_get": 0.6}, sessions=3, loaded=True, sets={frozenset({"slack_get"}): 0.6})
        )


def responder(rec: Recorded) -> Reply:
    step = sum(1 for m in rec.body["messages"] if m["role"] == "assistant")
    if step % 2 == 0:
        return Reply(body=anthropic_message(SEARCH_TURN, cache_read=1000 * step))
    return Reply(body=anthropic_message([{"type": "text", "text": "Rain in Oslo."}], cache_read=1000 * step))


def make_runtime(server: FakeLLMServer) -> tuple[Runtime, Any, list[ev.Event]]:
    host = make_plugin_host(
        records=[],
        extra=[
            AnthropicProvider(),
            Scoping(),
            DeferredToolsPlugin(DeferredConfig(strategy="native", enabled=True, never_defer=("email_get",))),
        ],
    )
    model = build_model("anthropic:test-model", {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV}, host)
    runtime = Runtime(
        model=model, tools=make_tools(), host=host, agent=AgentConfig(system_prompt="You help.", max_steps=4)
    )
    events: list[ev.Event] = []
    runtime.events.subscribe(events.append)
    return runtime, model, events


async def test_native_strategy_end_to_end_with_a_saved_and_resumed_session(
    server: FakeLLMServer, tmp_path: Path
) -> None:
    server.responder = responder
    runtime, model, events = make_runtime(server)
    session = runtime.session()
    try:
        outcome = await session.run("weather in Oslo?")
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text) == ("final", "Rain in Oslo.")

    first, second = server.requests
    tools = first.body["tools"]
    by_name = {t.get("name"): t for t in tools}
    deferred = {t["name"] for t in tools if t.get("defer_loading")}
    assert not any(n.startswith("billing_") for n in by_name)  # hidden tools are never sent
    assert {"ToolSearch", "deferred_tool_call", "load_tools"}.isdisjoint(by_name)  # the API searches
    assert "email_get" not in deferred and "slack_get" not in deferred  # never_defer, priors-eager
    st = session.state[DeferralState]
    assert st.strategy == "native"
    sent = {n for n in by_name if n} - {"tool_search_tool_bm25"}
    assert deferred == sent - {"email_get", "slack_get"}
    # placement decided it: the deferred set is the plugin's, less what scoping hides
    assert deferred == {n for n in st.deferred() if not n.startswith("billing_")}
    assert [t for t in tools if "cache_control" in t] == [{**BM25, "cache_control": EPHEMERAL}]
    assert all(t.get("defer_loading") for t in tools[tools.index(by_name["tool_search_tool_bm25"]) + 1 :])
    assert "Deferred tools" not in json.dumps(first.body["system"])  # no listing of greenroom's own

    # the loaded tool ran like any other, and the search counted as its discovery
    assert second.body["messages"][1] == {"role": "assistant", "content": SEARCH_TURN}
    result = second.body["messages"][2]["content"][0]
    assert (result["tool_use_id"], result["content"], result["is_error"]) == ("toolu_02", "weather_get(Oslo)", False)
    assert st.discovered == ["weather_get"]
    (searched,) = [e for e in events if isinstance(e, SearchPerformed)]
    assert (searched.query, searched.mode, searched.results) == (
        "weather city forecast",
        "hosted",
        (("weather_get", 1.0),),
    )

    # saved and resumed in a new runtime: the raw blocks come back and are replayed
    path = session.save(tmp_path / "s.json")
    runtime2, model2, _ = make_runtime(server)
    resumed = runtime2.load_session(path)
    assert resumed.messages[1].provider_content == ProviderContent("anthropic", tuple(SEARCH_TURN))
    try:
        await resumed.run("and tomorrow?")
    finally:
        await model2.aclose()
    assert len(server.requests) == 4
    for rec in server.requests[2:]:
        assert rec.body["messages"][1] == {"role": "assistant", "content": SEARCH_TURN}

    # the prefix (tools + system) is the same bytes on every request, across the resume
    prefixes = [(t["tools"], t["system"]) for t in (top_level_raw(r.raw) for r in server.requests)]
    assert all(p == prefixes[0] for p in prefixes)
    # ... and each request's history starts with the previous one's, byte for byte once
    # the moving breakpoints are left out
    histories = [json.dumps(strip_cache_control(r.body["messages"])) for r in server.requests]
    for before, after in itertools.pairwise(histories):
        assert after.startswith(before[:-1])
