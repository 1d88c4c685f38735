"""A real greenroom Runtime driving each provider against the fake server: a multi-step
run with tool calls (one of them broken), checking greenroom's promise that the
cacheable prefix (tools + system) is byte-identical on every request of a session and
the history only ever grows at its end; malformed arguments coming back to the model
as an error result; cancellation; and a model reused across event loops."""

from __future__ import annotations

import itertools
import json
from typing import Any

import anyio
import anyio.to_thread
import pytest
from support.fake_llm_server import (
    ANTHROPIC_KEY_ENV,
    OPENAI_KEY_ENV,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_message,
    array_items_raw,
    chat_completion,
    openai_tool_call,
    responses_object,
    strip_cache_control,
    top_level_raw,
)

from greenroom.compose.build import build_model
from greenroom.config import AgentConfig
from greenroom.plugins.discovery import discover, make_plugin_host
from greenroom.run.runtime import Runtime
from greenroom.tools import tool
from greenroom_anthropic import AnthropicProvider
from greenroom_openai import OpenAIProvider

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: What to shout.
    """
    return text.upper()


# The model's side of the conversation, one entry per step: (tool name, raw arguments)
# or final text. Step 2's arguments are broken on purpose; the runtime answers with an
# error result and the model corrects itself.
SCRIPT: list[tuple[str, str] | str] = [
    ("add", '{"a": 2, "b": 3}'),
    ("add", '{"a": 2, "b": '),
    ("shout", '{"text": "five"}'),
    "The answer is FIVE.",
]


def openai_responder(rec: Recorded) -> Reply:
    step = sum(1 for m in rec.body["messages"] if m["role"] == "assistant")
    turn = SCRIPT[step]
    cached = 1024 * step  # the prefix grows and is read back from the cache
    if isinstance(turn, str):
        return Reply(body=chat_completion(turn, prompt_tokens=2000 + step, cached_tokens=cached))
    name, args = turn
    return Reply(
        body=chat_completion(
            None, [openai_tool_call(f"call_{step}", name, args)], prompt_tokens=2000 + step, cached_tokens=cached
        )
    )


def anthropic_responder(rec: Recorded) -> Reply:
    step = sum(1 for m in rec.body["messages"] if m["role"] == "assistant")
    turn = SCRIPT[step]
    usage = {"input_tokens": 10, "cache_read": 1500 * step, "cache_write": 100}
    if isinstance(turn, str):
        return Reply(body=anthropic_message([{"type": "text", "text": turn}], **usage))
    name, args = turn
    try:
        tool_input: Any = json.loads(args)
    except ValueError:
        tool_input = {"a": 2, "b": "three"}  # Claude sends objects; make it invalid instead
    block = {"type": "tool_use", "id": f"toolu_{step}", "name": name, "input": tool_input}
    return Reply(body=anthropic_message([block], **usage))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_multi_step_run_keeps_the_prefix_byte_identical(server: FakeLLMServer, provider: str) -> None:
    if provider == "openai":
        server.responder = openai_responder
        options = {"base_url": server.url + "/v1", "api_key_env": OPENAI_KEY_ENV}
    else:
        server.responder = anthropic_responder
        options = {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV}
    host = make_plugin_host(records=[], extra=[OpenAIProvider(), AnthropicProvider()])
    model: Any = build_model(f"{provider}:test-model", options, host)
    runtime = Runtime(
        model=model,
        tools=[add, shout],
        host=host,
        agent=AgentConfig(system_prompt="You are a calculator that shouts.", max_steps=6),
    )
    try:
        outcome = await runtime.session().run("What is 2 + 3, shouted?")
    finally:
        await model.aclose()

    assert outcome.stop_reason == "final", outcome
    assert outcome.text == "The answer is FIVE."
    assert outcome.steps == 4
    assert len(server.requests) == 4

    # the promise: tools and system are the same bytes on every request
    tops = [top_level_raw(r.raw) for r in server.requests]
    if provider == "openai":
        prefixes = [(t["tools"], array_items_raw(t["messages"])[0]) for t in tops]
        assert json.loads(prefixes[0][1]) == {"role": "system", "content": "You are a calculator that shouts."}
    else:
        prefixes = [(t["tools"], t["system"]) for t in tops]
        assert '"cache_control"' in prefixes[0][0] and '"cache_control"' in prefixes[0][1]
    assert all(p == prefixes[0] for p in prefixes), "the cacheable prefix changed between steps"
    tools = json.loads(prefixes[0][0])
    names = [t["function"]["name"] if provider == "openai" else t["name"] for t in tools]
    assert names == ["add", "shout"]
    # ... and the history only grows at its end
    histories = [strip_cache_control(r.body["messages"]) for r in server.requests]
    for before, after in itertools.pairwise(histories):
        assert after[: len(before)] == before
    if provider == "openai":
        raw_histories = [array_items_raw(t["messages"]) for t in tops]
        for before_raw, after_raw in itertools.pairwise(raw_histories):
            assert after_raw[: len(before_raw)] == before_raw  # byte for byte

    # the tool ran, the broken call came back as an error result the model saw
    final = server.requests[-1].body["messages"]
    if provider == "openai":
        results = [m for m in final if m["role"] == "tool"]
        assert [r["content"] for r in results[:1]] == ["5"]
        assert "not a JSON object" in results[1]["content"]
        assert results[2]["content"] == "FIVE"
        broken = final[4]["tool_calls"][0]["function"]["arguments"]
        assert broken == '{"a": 2, "b": '  # replayed verbatim
        assert outcome.usage.cached_input_tokens == 1024 * (0 + 1 + 2 + 3)
    else:
        results = [b for m in final if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"]
        assert [r["is_error"] for r in results] == [False, True, False]
        assert results[0]["content"] == "5" and results[2]["content"] == "FIVE"
        assert "invalid arguments" in results[1]["content"]
        assert outcome.usage.cached_input_tokens == 1500 * (0 + 1 + 2 + 3)
        assert outcome.usage.cache_write_tokens == 400
        assert outcome.usage.input_tokens == 4 * (10 + 100) + 1500 * 6


def test_providers_are_installed_plugins() -> None:
    records = {r.name: r for r in discover()}
    for name, cls in (("openai", OpenAIProvider), ("anthropic", AnthropicProvider)):
        assert records[name].cls is cls and records[name].failure is None


# ----------------------------------------------------------------------------- malformed arguments


def wire_tool_call(api: str, step: int, name: str, arguments: str) -> Reply:
    """A reply whose one tool call carries ``arguments`` exactly as given."""
    if api == "chat":
        return Reply(body=chat_completion(None, [openai_tool_call(f"call_{step}", name, arguments)]))
    if api == "responses":
        item = {"type": "function_call", "id": f"fc_{step}", "call_id": f"call_{step}", "name": name}
        return Reply(body=responses_object([{**item, "arguments": arguments, "status": "completed"}]))
    # Claude itself always sends an object; a string is what a broken proxy in front of
    # it can send, and the adapter must cope the same way
    return Reply(
        body=anthropic_message([{"type": "tool_use", "id": f"toolu_{step}", "name": name, "input": arguments}])
    )


def wire_text(api: str, text: str) -> Reply:
    if api == "chat":
        return Reply(body=chat_completion(text))
    if api == "responses":
        part = {"type": "output_text", "text": text, "annotations": []}
        return Reply(body=responses_object([{"type": "message", "role": "assistant", "content": [part]}]))
    return Reply(body=anthropic_message([{"type": "text", "text": text}]))


def error_results(api: str, body: Any) -> list[tuple[str, bool | None]]:
    """(content, is_error) of every tool result in a request body, in order."""
    if api == "chat":
        return [(m["content"], None) for m in body["messages"] if m["role"] == "tool"]
    if api == "responses":
        return [(i["output"], None) for i in body["input"] if i.get("type") == "function_call_output"]
    return [
        (b["content"], b["is_error"])
        for m in body["messages"]
        if m["role"] == "user"
        for b in m["content"]
        if b["type"] == "tool_result"
    ]


def model_for(api: str, server: FakeLLMServer, host: Any) -> Any:
    if api == "anthropic":
        return build_model("anthropic:test-model", {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV}, host)
    options = {"base_url": server.url + "/v1", "api_key_env": OPENAI_KEY_ENV, "api": api}
    return build_model("openai:test-model", options, host)


@pytest.mark.parametrize("api", ["chat", "responses", "anthropic"])
async def test_malformed_arguments_reach_the_model_as_an_error_result(server: FakeLLMServer, api: str) -> None:
    server.push(
        wire_tool_call(api, 1, "add", '{"a": 2, "b": '),  # cut off mid-object
        wire_tool_call(api, 2, "add", '{"a": 2, "b": 3}'),
        wire_text(api, "5"),
    )
    host = make_plugin_host(records=[], extra=[OpenAIProvider(), AnthropicProvider()])
    model = model_for(api, server, host)
    runtime = Runtime(model=model, tools=[add], host=host, agent=AgentConfig(max_steps=5))
    try:
        outcome = await runtime.session().run("2 + 3?")
    finally:
        await model.aclose()

    # the run went on: the model saw the error, called again, and answered
    assert (outcome.stop_reason, outcome.text, outcome.steps) == ("final", "5", 3)
    second = error_results(api, server.requests[1].body)
    assert len(second) == 1
    content, is_error = second[0]
    assert "the arguments for 'add' are not a JSON object" in content
    assert '{"a": 2, "b": ' in content  # quoted, so the model can see what it got wrong
    assert is_error in (True, None)  # only Anthropic's wire format has the flag
    assert [c for c, _ in error_results(api, server.requests[2].body)][1] == "5"


# ----------------------------------------------------------------------------- cancellation


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
async def test_cancelling_a_run_closes_the_http_call_and_the_model_stays_usable(
    server: FakeLLMServer, provider: str
) -> None:
    api = "chat" if provider == "openai" else "anthropic"
    server.push(Reply(hang=True), wire_text(api, "still here"))
    host = make_plugin_host(records=[], extra=[OpenAIProvider(), AnthropicProvider()])
    model = model_for(api, server, host)
    runtime = Runtime(model=model, tools=[add], host=host, agent=AgentConfig(max_steps=3))
    session = runtime.session()
    try:
        with anyio.move_on_after(0.3) as scope:
            await session.run("this will be cancelled")
        assert scope.cancelled_caught
        # the request was abandoned on the wire, not left running in the background
        assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))
        outcome = await session.run("and now?")
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text) == ("final", "still here")


async def test_a_model_survives_a_new_event_loop(server: FakeLLMServer) -> None:
    """``anyio.run`` twice with one runtime (scripts, notebooks): the SDK client's
    connections belong to the first loop, so the second must not reuse them."""
    server.responder = lambda rec: wire_text("chat", "hi")
    host = make_plugin_host(records=[], extra=[OpenAIProvider()])
    model = model_for("chat", server, host)
    runtime = Runtime(model=model, tools=[add], host=host)

    def run_in_a_fresh_loop() -> str:
        async def go() -> str:
            return (await runtime.session().run("hello")).text

        return anyio.run(go)

    texts = [await anyio.to_thread.run_sync(run_in_a_fresh_loop) for _ in range(2)]
    assert texts == ["hi", "hi"]
    await model.aclose()
