"""The openai provider streamed, against a local server speaking each API's server-sent
events: text as it arrives (before the rest is even sent), tool calls assembled from
index-keyed fragments, usage with cached tokens from the last chunk, the exact request
bodies, and streams that break before or after text, end short, or report an error."""

from __future__ import annotations

import threading
from collections.abc import Callable
from contextlib import aclosing
from typing import Any

import anyio
import pytest
from support.fake_llm_server import SSE, FakeLLMServer, Reply, SleepRecorder, chat_completion, openai_tool_call
from support.openai_wire import chat_stream, chunk, event, message_item, response, responses_stream

from greenroom.models import Message, ModelRequest, ModelResponse, StreamItem, TextDelta, ToolCall
from greenroom.providers import (
    ProviderConnectionError,
    ProviderRequestError,
    ProviderServerError,
    ProviderToolCallError,
)
from greenroom.tools import ToolDescriptor

pytestmark = pytest.mark.anyio

ADD = ToolDescriptor(
    "add",
    "Add two integers.",
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
)
REQUEST = ModelRequest(system=(), tools=(ADD,), messages=(Message("user", "add 2 and 3"),))


async def collect(model: Any, request: ModelRequest = REQUEST) -> tuple[str, ModelResponse, list[str]]:
    pieces: list[str] = []
    final: ModelResponse | None = None
    async with aclosing(model.stream(request)) as items:
        async for item in items:
            assert final is None, "nothing may follow the response"
            if isinstance(item, TextDelta):
                pieces.append(item.text)
            else:
                final = item
    assert final is not None
    return "".join(pieces), final, pieces


# ----------------------------------------------------------------------------- chat


async def test_chat_text_arrives_before_the_rest_is_sent(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    gate = threading.Event()
    server.push(Reply(stream=chat_stream(["Hel", "lo", " there"]), gate=gate, gate_after=2))
    first: list[StreamItem] = []
    async with aclosing(make_openai().stream(REQUEST)) as items:
        first.append(await anext(items))  # the server holds everything after "Hel"
        rest = [item async for item in _released(items, gate)]
    assert first == [TextDelta("Hel")]
    assert [i.text for i in rest if isinstance(i, TextDelta)] == ["lo", " there"]
    final = rest[-1]
    assert isinstance(final, ModelResponse) and final.message.content == "Hello there"
    assert final.stop_reason == "stop"


async def _released(items: Any, gate: threading.Event) -> Any:
    gate.set()
    async for item in items:
        yield item


async def test_chat_calls_are_assembled_from_fragments_with_usage_and_the_exact_body(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    calls = [("call_a", "add", ['{"a": ', "2, ", '"b": 3}']), ("call_b", "add", ['{"a": 1,', ' "b"'])]
    server.push(Reply(stream=chat_stream(["Adding."], calls, usage=(2048, 40, 1920))))
    text, final, _ = await collect(make_openai(max_tokens=64))
    assert text == "Adding." and final.message.content == "Adding."
    good, cut = final.tool_calls
    assert good == ToolCall("call_a", "add", {"a": 2, "b": 3}, '{"a": 2, "b": 3}')
    assert (cut.id, cut.arguments, cut.raw_arguments) == ("call_b", None, '{"a": 1, "b"')  # the model's text, kept
    assert (final.usage.input_tokens, final.usage.output_tokens, final.usage.cached_input_tokens) == (2048, 40, 1920)
    assert final.stop_reason == "tool_calls"
    (rec,) = server.requests
    assert rec.path == "/v1/chat/completions"
    assert rec.body == {
        "model": "gpt-test",
        "messages": [{"role": "user", "content": "add 2 and 3"}],
        "stream": True,
        "tools": [
            {
                "type": "function",
                "function": {"name": "add", "description": ADD.description, "parameters": dict(ADD.parameters)},
            }
        ],
        "max_completion_tokens": 64,
        "stream_options": {"include_usage": True},
    }


async def test_chat_a_stream_cut_before_any_text_is_retried(
    server: FakeLLMServer, sleeps: SleepRecorder, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(stream=chat_stream(["never shown"]), break_after=1), Reply(stream=chat_stream(["ok"])))
    text, _, _ = await collect(make_openai())
    assert text == "ok" and len(server.requests) == 2 and len(sleeps.waits) == 1
    assert server.requests[0].raw == server.requests[1].raw


async def test_chat_a_stream_cut_after_text_raises_and_is_not_retried(
    server: FakeLLMServer, sleeps: SleepRecorder, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(stream=chat_stream(["Hel", "lo"]), break_after=3), Reply(stream=chat_stream(["again"])))
    shown: list[str] = []
    with pytest.raises(ProviderConnectionError, match="the stream broke after text was shown; not retried") as info:
        async with aclosing(make_openai().stream(REQUEST)) as items:
            async for item in items:
                assert isinstance(item, TextDelta), "no response from a broken stream"
                shown.append(item.text)
    assert shown == ["Hel", "lo"] and len(server.requests) == 1 and sleeps.waits == []
    assert info.value.retryable is False and str(info.value).startswith("openai:gpt-test: connection failed")


async def test_chat_a_stream_that_ends_without_finishing_gives_no_half_call(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    head = {"index": 0, "id": "call_a", "type": "function", "function": {"name": "add", "arguments": '{"a": 2'}}
    short = [SSE(chunk({"role": "assistant", "content": None})), SSE(chunk({"tool_calls": [head]})), SSE("[DONE]")]
    server.push(*[Reply(stream=short)] * 3)
    with pytest.raises(ProviderConnectionError, match=r"after 3 attempts: the stream ended before the answer"):
        await collect(make_openai())


async def test_chat_an_error_in_the_stream_is_retried_like_its_status(
    server: FakeLLMServer, sleeps: SleepRecorder, make_openai: Callable[..., Any]
) -> None:
    overloaded = [
        SSE({"error": {"message": "The server is overloaded", "type": "server_error", "code": "server_error"}})
    ]
    refused = [SSE({"error": {"message": "Bad prompt", "type": "invalid_request_error", "code": "invalid_prompt"}})]
    server.push(Reply(stream=overloaded), Reply(stream=chat_stream(["fine"])), Reply(stream=refused))
    model = make_openai()
    assert (await collect(model))[0] == "fine"
    with pytest.raises(ProviderRequestError, match=r"Bad prompt \(invalid_prompt\)"):
        await collect(model)
    assert len(server.requests) == 3 and len(sleeps.waits) == 1


async def test_chat_a_call_without_a_function_is_asked_again_then_named(
    server: FakeLLMServer, sleeps: SleepRecorder, make_openai: Callable[..., Any]
) -> None:
    null = [
        SSE(chunk({"role": "assistant", "content": None})),
        SSE(chunk({"tool_calls": [{"index": 0, "id": "call_x", "type": "function", "function": None}]})),
        SSE(chunk({}, "tool_calls")),
        SSE("[DONE]"),
    ]
    server.push(Reply(stream=null), Reply(stream=chat_stream([], [("call_y", "add", ['{"a":1,"b":2}'])])))
    _, final, _ = await collect(make_openai())
    assert [c.id for c in final.tool_calls] == ["call_y"] and len(server.requests) == 2
    server.push(*[Reply(stream=null)] * 3)
    with pytest.raises(ProviderToolCallError, match=r"after 3 attempts: the model asked for a tool call greenroom"):
        await collect(make_openai())


async def test_cancelling_a_stream_closes_the_connection(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    gate = threading.Event()  # never set: the server holds the stream after its first text
    server.push(Reply(stream=chat_stream(["Hel", "lo"]), gate=gate, gate_after=2))
    with anyio.move_on_after(0.5) as scope:
        await collect(make_openai(timeout=30))
    assert scope.cancelled_caught
    gate.set()  # the handler writes on, into a closed connection
    assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))


# ----------------------------------------------------------------------------- responses


async def test_responses_stream_text_calls_usage_and_the_exact_body(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_9",
        "name": "add",
        "arguments": '{"a": 4, "b": 5}',
        "status": "completed",
    }
    server.push(Reply(stream=responses_stream([message_item("Adding now."), call], usage=(1500, 30, 1280))))
    text, final, pieces = await collect(make_openai(api="responses"))
    assert text == "Adding now." and pieces == ["Addi", "ng n", "ow."]
    assert final.message.content == "Adding now."
    assert final.tool_calls == (ToolCall("call_9", "add", {"a": 4, "b": 5}, '{"a": 4, "b": 5}'),)
    assert (final.usage.input_tokens, final.usage.cached_input_tokens, final.usage.output_tokens) == (1500, 1280, 30)
    assert final.message.provider_content is None  # nothing to keep: the turn is rebuilt from itself
    (rec,) = server.requests
    assert rec.path == "/v1/responses"
    assert rec.body == {
        "model": "gpt-test",
        "input": [{"role": "user", "content": "add 2 and 3"}],
        "stream": True,
        "store": False,
        "tools": [
            {
                "type": "function",
                "name": "add",
                "description": ADD.description,
                "parameters": dict(ADD.parameters),
                "strict": False,
            }
        ],
    }


async def test_responses_a_stream_without_completed_gives_no_half_call(
    server: FakeLLMServer, sleeps: SleepRecorder, make_openai: Callable[..., Any]
) -> None:
    call = {"type": "function_call", "id": "fc_1", "call_id": "call_1", "name": "add", "arguments": '{"a": 1, "b": 2}'}
    server.push(Reply(stream=responses_stream([call])[:-1]), Reply(stream=responses_stream([call])))
    _, final, _ = await collect(make_openai(api="responses"))
    assert [c.id for c in final.tool_calls] == ["call_1"] and len(server.requests) == 2 and len(sleeps.waits) == 1


async def test_responses_an_error_event_ends_the_stream_with_the_api_error(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(stream=[event("error", code="context_length_exceeded", message="Too long", param=None)]))
    with pytest.raises(ProviderRequestError, match=r"Too long \(context_length_exceeded\)"):
        await collect(make_openai(api="responses"))


async def test_responses_a_failed_event_is_a_server_error_retried(
    server: FakeLLMServer, sleeps: SleepRecorder, make_openai: Callable[..., Any]
) -> None:
    failed = {**response([], "failed"), "error": {"code": "server_error", "message": "Something broke"}}
    broken = [
        event("response.created", response=response([], "in_progress")),
        event("response.failed", response=failed),
    ]
    server.push(Reply(stream=broken), Reply(stream=broken), Reply(stream=broken))
    with pytest.raises(ProviderServerError, match=r"after 3 attempts: Something broke \(server_error\)"):
        await collect(make_openai(api="responses"))


async def test_responses_stream_of_a_search_turn_with_reasoning(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA=="}
    search: dict[str, Any] = {"type": "tool_search_call", "id": "tsc_1", "call_id": "call_s", "execution": "client"}
    search = {**search, "arguments": {"query": "weather"}, "status": "completed"}
    stream = responses_stream([reasoning, search])
    # a summary delta of the reasoning is never shown
    stream.insert(2, event("response.reasoning_summary_text.delta", output_index=0, item_id="rs_1", delta="hmm"))
    server.push(Reply(stream=stream))
    request = ModelRequest(system=(), tools=(ADD,), messages=REQUEST.messages, deferred=frozenset({"add"}))
    text, final, _ = await collect(make_openai(api="responses", tool_search=True, reasoning_items=True), request)
    assert text == "" and final.message.content == ""
    assert final.tool_calls == (ToolCall("call_s", "tool_search", {"query": "weather"}, '{"query": "weather"}'),)
    kept = final.message.provider_content
    assert kept is not None and [b["type"] for b in kept.blocks] == ["reasoning", "tool_search_call"]
    body = server.requests[0].body
    assert body["include"] == ["reasoning.encrypted_content"] and body["stream"] is True
    # its only tool stays loaded (the API wants one): nothing is left to search
    assert [t["type"] for t in body["tools"]] == ["function"]


async def test_a_stream_ends_with_the_response_complete_gives(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    whole = chat_completion(
        "Adding.",
        [openai_tool_call("call_a", "add", '{"a": 2, "b": 3}')],
        prompt_tokens=2048,
        completion_tokens=40,
        cached_tokens=1920,
    )
    server.push(
        Reply(body=whole),
        Reply(
            stream=chat_stream(["Add", "ing."], [("call_a", "add", ['{"a": 2,', ' "b": 3}'])], usage=(2048, 40, 1920))
        ),
    )
    model = make_openai()
    completed = await model.complete(REQUEST)
    _, streamed, _ = await collect(model)
    assert streamed == completed
