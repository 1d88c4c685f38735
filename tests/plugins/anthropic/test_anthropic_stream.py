"""The anthropic provider's ``stream`` against a local server speaking the Messages API's
server-sent events as documented: message_start, content_block_start / _delta / _stop
(text_delta, input_json_delta, thinking_delta, signature_delta), message_delta with the
usage, message_stop, ping and error. Text is yielded as it arrives; calls, thinking and
hosted-search blocks come whole in the final response; a stream that breaks is retried
while nothing was shown, and is an error after; cancellation closes the connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest
from support.fake_llm_server import SSE, FakeLLMServer, Reply, SleepRecorder, anthropic_error, anthropic_message

from greenroom.models import Message, ModelRequest, ModelResponse, ProviderContent, SystemSection, TextDelta, ToolCall
from greenroom.providers import ProviderConnectionError, ProviderRequestError, ProviderServerError, ProviderTimeoutError
from greenroom.tools import ToolDescriptor

pytestmark = pytest.mark.anyio

ADD = ToolDescriptor(
    "add", "Add two integers.", {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}}
)
REQUEST = ModelRequest(
    system=(SystemSection("agent", "You are terse."),), tools=(ADD,), messages=(Message("user", "add 2 and 3"),)
)


def event(kind: str, **data: Any) -> SSE:
    """One event as the API sends it: the SSE name and the data's ``type`` agree."""
    return SSE({"type": kind, **data}, event=kind)


def message_start(input_tokens: int = 25, cache_read: int = 0, cache_write: int = 0) -> SSE:
    message = anthropic_message([], input_tokens=input_tokens, output_tokens=1, cache_read=cache_read)
    message["usage"]["cache_creation_input_tokens"] = cache_write
    message.update(content=[], stop_reason=None)
    return event("message_start", message=message)


def text_block(index: int, *pieces: str) -> list[SSE]:
    return [
        event("content_block_start", index=index, content_block={"type": "text", "text": ""}),
        *(event("content_block_delta", index=index, delta={"type": "text_delta", "text": p}) for p in pieces),
        event("content_block_stop", index=index),
    ]


def tool_block(index: int, call_id: str, name: str, *json_pieces: str, kind: str = "tool_use") -> list[SSE]:
    start = {"type": kind, "id": call_id, "name": name, "input": {}}
    deltas = (
        event("content_block_delta", index=index, delta={"type": "input_json_delta", "partial_json": p})
        for p in json_pieces
    )
    return [
        event("content_block_start", index=index, content_block=start),
        *deltas,
        event("content_block_stop", index=index),
    ]


def thinking_block(index: int, *pieces: str, signature: str = "sig-abc") -> list[SSE]:
    return [
        event("content_block_start", index=index, content_block={"type": "thinking", "thinking": "", "signature": ""}),
        *(event("content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": p}) for p in pieces),
        event("content_block_delta", index=index, delta={"type": "signature_delta", "signature": signature}),
        event("content_block_stop", index=index),
    ]


def ending(stop_reason: str = "end_turn", output_tokens: int = 15) -> list[SSE]:
    return [
        event(
            "message_delta",
            delta={"stop_reason": stop_reason, "stop_sequence": None},
            usage={"output_tokens": output_tokens},
        ),
        event("message_stop"),
    ]


def overloaded() -> SSE:
    return SSE(anthropic_error("overloaded_error", "Overloaded"), event="error")


HELLO = [message_start(cache_read=1800, cache_write=300), event("ping"), *text_block(0, "Hel", "lo", "!"), *ending()]


async def collect(model: Any, request: ModelRequest = REQUEST) -> tuple[list[str], ModelResponse]:
    texts: list[str] = []
    final: list[ModelResponse] = []
    async for item in model.stream(request):
        assert not final, "nothing comes after the response"
        if isinstance(item, TextDelta):
            texts.append(item.text)
        else:
            final.append(item)
    (response,) = final
    return texts, response


@pytest.fixture
def make(make_anthropic: Callable[..., Any]) -> Callable[..., Any]:
    return make_anthropic


async def test_text_arrives_in_pieces_and_the_response_has_the_usage(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(Reply(stream=HELLO), Reply(body=anthropic_message([{"type": "text", "text": "Hello!"}])))
    model = make(max_tokens=512)
    texts, response = await collect(model)
    assert texts == ["Hel", "lo", "!"]
    assert (response.message.content, response.stop_reason, response.tool_calls) == ("Hello!", "end_turn", ())
    assert response.message.provider_content is None
    usage = response.usage
    # fresh + cache reads + writes from message_start; the output from message_delta
    assert (usage.input_tokens, usage.cached_input_tokens, usage.cache_write_tokens, usage.output_tokens) == (
        25 + 1800 + 300,
        1800,
        300,
        15,
    )
    # the same body as complete() sends, asking for a stream
    await model.complete(REQUEST)
    streamed, whole = (r.body for r in server.requests)
    assert streamed.pop("stream") is True
    assert streamed == whole
    assert server.requests[0].path == "/v1/messages"


async def test_each_piece_is_yielded_before_the_rest_is_sent(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    gate = threading.Event()
    # the server holds the stream after the first text delta until the test has it
    server.push(Reply(stream=HELLO, gate=gate, gate_after=4))
    stream = make().stream(REQUEST)
    try:
        with anyio.fail_after(5):  # far below the server's hold (10 s): no buffering
            first = await stream.__anext__()
        assert first == TextDelta("Hel")
        gate.set()
        rest = [item async for item in stream]
    finally:
        gate.set()
        await stream.aclose()
    assert [r.text for r in rest if isinstance(r, TextDelta)] == ["lo", "!"]
    assert isinstance(rest[-1], ModelResponse) and rest[-1].message.content == "Hello!"


async def test_tool_input_thinking_and_text_come_whole(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    events = [
        message_start(),
        *thinking_block(0, "The user wants ", "a sum."),
        *text_block(1, "Adding."),
        *tool_block(2, "toolu_1", "add", "", '{"a": 2', ', "b"', ": 3}"),
        *tool_block(3, "toolu_2", "add"),  # no input streamed: a call without arguments
        *ending("tool_use", 40),
    ]
    server.push(Reply(stream=events))
    texts, response = await collect(make(thinking={"budget_tokens": 2048}))
    assert texts == ["Adding."]  # thinking is never shown
    assert response.tool_calls == (ToolCall("toolu_1", "add", {"a": 2, "b": 3}), ToolCall("toolu_2", "add", {}))
    assert response.message.content == "Adding."
    assert response.message.provider_content == ProviderContent(
        "anthropic",
        (
            {"type": "thinking", "thinking": "The user wants a sum.", "signature": "sig-abc"},
            {"type": "text", "text": "Adding."},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
            {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {}},
        ),
    )
    assert server.requests[0].body["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_hosted_search_blocks_stream_whole(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    result = {
        "type": "tool_search_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {
            "type": "tool_search_tool_search_result",
            "tool_references": [{"type": "tool_reference", "tool_name": "add"}],
        },
    }
    events = [
        message_start(),
        *tool_block(0, "srvtoolu_1", "tool_search_tool_bm25", '{"query": ', '"sum numbers"}', kind="server_tool_use"),
        event("content_block_start", index=1, content_block=result),
        event("content_block_stop", index=1),
        *tool_block(2, "toolu_1", "add", '{"a": 1, "b": 1}'),
        *ending("tool_use"),
    ]
    server.push(Reply(stream=events))
    _, response = await collect(make())
    (search,) = response.searches
    assert (search.query, search.tools) == ("sum numbers", ("add",))
    assert response.message.provider_content is not None
    blocks = response.message.provider_content.blocks
    assert blocks[0] == {
        "type": "server_tool_use",
        "id": "srvtoolu_1",
        "name": "tool_search_tool_bm25",
        "input": {"query": "sum numbers"},
    }
    assert blocks[1] == result


async def test_a_cut_off_tool_input_is_never_a_call_with_half_its_arguments(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    events = [message_start(), *tool_block(0, "toolu_1", "add", '{"a": 2, "b'), *ending("max_tokens")]
    server.push(Reply(stream=events))
    _, response = await collect(make())
    (call,) = response.tool_calls
    assert (call.arguments, call.raw_arguments) == (None, '{"a": 2, "b')  # the run answers with an error result


async def test_a_stream_cut_before_any_text_is_retried(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.push(Reply(stream=HELLO, break_after=3), Reply(stream=HELLO))
    texts, response = await collect(make())
    assert (texts, response.message.content) == (["Hel", "lo", "!"], "Hello!")
    assert len(server.requests) == 2 and server.requests[0].raw == server.requests[1].raw
    assert len(sleeps.waits) == 1


async def test_a_stream_cut_after_text_is_an_error_not_a_second_answer(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.push(Reply(stream=HELLO, break_after=5), Reply(stream=HELLO))
    texts: list[str] = []
    with pytest.raises(ProviderConnectionError) as info:
        async for item in make().stream(REQUEST):
            assert isinstance(item, TextDelta)
            texts.append(item.text)
    assert texts == ["Hel", "lo"]
    assert info.value.retryable is False and "not retried" in str(info.value)
    assert str(info.value).startswith("anthropic:claude-test: ")
    assert len(server.requests) == 1 and sleeps.waits == []


async def test_an_overloaded_error_event_is_retried_like_a_529(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.push(Reply(stream=[message_start(), event("ping"), overloaded()]), Reply(stream=HELLO))
    _, response = await collect(make())
    assert response.message.content == "Hello!"
    assert len(server.requests) == 2 and len(sleeps.waits) == 1

    server.responder = lambda rec: Reply(stream=[message_start(), overloaded()])
    with pytest.raises(ProviderServerError) as info:
        await collect(make(max_retries=1))
    assert (info.value.status, info.value.attempts) == (529, 2)
    assert "Overloaded (overloaded_error, in the event stream)" in str(info.value)


async def test_an_error_event_after_text_is_not_retried(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(stream=[message_start(), *text_block(0, "Hel")[:2], overloaded()]))
    with pytest.raises(ProviderServerError, match="not retried"):
        await collect(make())
    assert len(server.requests) == 1


async def test_http_errors_before_the_stream_are_the_usual_ones(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.push(Reply(529, anthropic_error("overloaded_error", "Overloaded")), Reply(stream=HELLO))
    _, response = await collect(make())
    assert response.message.content == "Hello!" and len(sleeps.waits) == 1
    server.push(Reply(400, anthropic_error("invalid_request_error", "max_tokens: too large")))
    with pytest.raises(ProviderRequestError, match="max_tokens: too large"):
        await collect(make())


async def test_a_stalled_stream_times_out(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    gate = threading.Event()
    server.push(Reply(stream=HELLO, gate=gate, gate_after=2))
    try:
        with pytest.raises(ProviderTimeoutError, match=r"^anthropic:claude-test: timed out calling .*stalled"):
            await collect(make(timeout=0.3, max_retries=0))
    finally:
        gate.set()


async def test_cancelling_a_stream_closes_its_connection(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    gate = threading.Event()
    server.push(Reply(stream=[*HELLO, *([event("ping")] * 50)], gate=gate, gate_after=4))
    model = make(timeout=30)
    with anyio.move_on_after(5) as scope:
        async for item in model.stream(REQUEST):
            assert item == TextDelta("Hel")
            scope.cancel()  # whoever reads stops here, with the stream still open
    gate.set()
    assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))
