"""The gemini provider's ``stream`` against a local server speaking
``streamGenerateContent?alt=sse`` as documented: every event a whole
GenerateContentResponse with the next parts, the usage so far, and the finish reason on
the last. Text is yielded as it arrives (never thoughts); calls and signatures come whole
in the final response; a stream that breaks is retried while nothing was shown, and is
an error after; an error event is judged by its code; cancellation closes the
connection."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest
from support.fake_llm_server import SSE, FakeLLMServer, Reply, SleepRecorder, gemini_call, gemini_error, gemini_response

from greenroom import Message, ModelRequest, ModelResponse, ProviderContent, SystemSection, TextDelta, ToolCall
from greenroom import ToolDescriptor as Tool
from greenroom.providers import ProviderConnectionError, ProviderRequestError, ProviderServerError, ProviderTimeoutError

pytestmark = pytest.mark.anyio

ADD = Tool("add", "Add two integers.", {"type": "object", "properties": {"a": {"type": "integer"}}})
REQUEST = ModelRequest(
    system=(SystemSection("agent", "You are terse."),), tools=(ADD,), messages=(Message("user", "add 2 and 3"),)
)


def event(parts: list[dict[str, Any]], finish: str | None = None, **usage: int) -> SSE:
    """One event of the stream: these parts, the usage so far, the finish reason on the last."""
    return SSE(gemini_response(parts, finish_reason=finish, **usage))


HELLO = [
    event([{"text": "Hel"}], prompt_tokens=25, output_tokens=1),
    event([{"text": "lo"}], prompt_tokens=25, output_tokens=2),
    event([{"text": "!"}], "STOP", prompt_tokens=2125, cached_tokens=1800, output_tokens=3, thoughts_tokens=12),
]


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


async def test_text_arrives_in_pieces_and_the_response_has_the_usage(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(stream=HELLO), Reply(body=gemini_response([{"text": "Hello!"}])))
    model = make_gemini(max_tokens=512)
    texts, response = await collect(model)
    assert texts == ["Hel", "lo", "!"]
    assert (response.message.content, response.stop_reason, response.tool_calls) == ("Hello!", "STOP", ())
    usage = response.usage
    # the last event's totals: the prompt with its cached part, the answer with its thinking
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (2125, 1800, 15)
    # the same body as complete() sends, at the streaming method
    await model.complete(REQUEST)
    streamed, whole = server.requests
    assert streamed.path.endswith("/models/gemini-test:streamGenerateContent?alt=sse")
    assert whole.path.endswith("/models/gemini-test:generateContent")
    assert streamed.body == whole.body


async def test_each_piece_is_yielded_before_the_rest_is_sent(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    gate = threading.Event()
    server.push(Reply(stream=HELLO, gate=gate, gate_after=1))  # held after the first event
    stream = make_gemini().stream(REQUEST)
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


async def test_calls_thoughts_and_signatures_come_whole(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    events = [
        event([{"text": "The user wants ", "thought": True}]),
        event([{"text": "a sum.", "thought": True}]),
        event([{"text": "Add"}]),
        event([{"text": "ing.", "thoughtSignature": "c2lnLXRleHQ="}]),
        event([gemini_call("add", {"a": 2}, call_id="fc_1", signature="c2lnLWNhbGw=")]),
        event([gemini_call("add", {"a": 3})], "STOP"),
    ]
    server.push(Reply(stream=events))
    texts, response = await collect(make_gemini(thinking={"include_thoughts": True}))
    assert texts == ["Add", "ing."]  # thoughts are never shown
    assert response.message.content == "Adding."
    assert response.tool_calls == (ToolCall("fc_1", "add", {"a": 2}), ToolCall("call_0_3", "add", {"a": 3}))
    assert response.message.provider_content == ProviderContent(
        "gemini",
        (
            {"text": "The user wants a sum.", "thought": True},
            {"text": "Adding.", "thoughtSignature": "c2lnLXRleHQ="},
            {"functionCall": {"id": "fc_1", "name": "add", "args": {"a": 2}}, "thoughtSignature": "c2lnLWNhbGw="},
            {"functionCall": {"id": "call_0_3", "name": "add", "args": {"a": 3}}},
        ),
    )


async def test_a_signature_on_a_last_empty_piece_stays_with_its_text(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    events = [event([{"text": "Done"}]), event([{"text": ".", "thoughtSignature": ""}]), event([])]
    events[-1] = event([{"text": "", "thoughtSignature": "c2ln"}], "STOP")
    server.push(Reply(stream=events))
    texts, response = await collect(make_gemini())
    assert texts == ["Done", "."]
    assert response.message.provider_content == ProviderContent(
        "gemini", ({"text": "Done.", "thoughtSignature": "c2ln"},)
    )


async def test_a_stream_cut_before_any_text_is_retried(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(stream=HELLO, break_after=0), Reply(stream=HELLO))
    texts, response = await collect(make_gemini())
    assert (texts, response.message.content) == (["Hel", "lo", "!"], "Hello!")
    assert len(server.requests) == 2 and server.requests[0].raw == server.requests[1].raw
    assert len(sleeps.waits) == 1


async def test_a_stream_without_a_finish_reason_is_incomplete(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(stream=[event([gemini_call("add", {"a": 2})])]), Reply(stream=HELLO))
    texts, response = await collect(make_gemini())
    assert (texts, response.tool_calls) == (["Hel", "lo", "!"], ())  # the half-read call never came out
    assert len(sleeps.waits) == 1


async def test_a_stream_cut_after_text_is_an_error_not_a_second_answer(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(stream=HELLO, break_after=2), Reply(stream=HELLO))
    texts: list[str] = []
    with pytest.raises(ProviderConnectionError) as info:
        async for item in make_gemini().stream(REQUEST):
            assert isinstance(item, TextDelta)
            texts.append(item.text)
    assert texts == ["Hel", "lo"]
    assert info.value.retryable is False and "not retried" in str(info.value)
    assert str(info.value).startswith("gemini:gemini-test: ")
    assert len(server.requests) == 1 and sleeps.waits == []


def unavailable() -> SSE:
    return SSE(gemini_error(503, "The model is overloaded. Please try again later.", "UNAVAILABLE"))


async def test_an_error_event_is_judged_by_its_code(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(stream=[unavailable()]), Reply(stream=HELLO))
    _, response = await collect(make_gemini())
    assert response.message.content == "Hello!"
    assert len(server.requests) == 2 and len(sleeps.waits) == 1

    server.responder = lambda rec: Reply(stream=[unavailable()])
    with pytest.raises(ProviderServerError) as info:
        await collect(make_gemini(max_retries=1))
    assert (info.value.status, info.value.attempts) == (503, 2)
    assert "The model is overloaded. Please try again later. (UNAVAILABLE)" in str(info.value)


async def test_an_error_event_after_text_is_not_retried(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(stream=[HELLO[0], unavailable()]))
    with pytest.raises(ProviderServerError, match="not retried"):
        await collect(make_gemini())
    assert len(server.requests) == 1


async def test_http_errors_before_the_stream_are_the_usual_ones(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(500, gemini_error(500, "An internal error has occurred.", "INTERNAL")), Reply(stream=HELLO))
    _, response = await collect(make_gemini())
    assert response.message.content == "Hello!" and len(sleeps.waits) == 1
    server.push(Reply(400, gemini_error(400, "maxOutputTokens: too large", "INVALID_ARGUMENT")))
    with pytest.raises(ProviderRequestError, match="maxOutputTokens: too large"):
        await collect(make_gemini())


async def test_a_stalled_stream_times_out(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    gate = threading.Event()
    server.push(Reply(stream=HELLO, gate=gate, gate_after=1))
    try:
        with pytest.raises(ProviderTimeoutError, match=r"^gemini:gemini-test: timed out calling .*stalled"):
            await collect(make_gemini(timeout=0.3, max_retries=0))
    finally:
        gate.set()


async def test_cancelling_a_stream_closes_its_connection(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    gate = threading.Event()
    server.push(Reply(stream=[*HELLO[:1], *([event([{"text": "."}])] * 50), HELLO[-1]], gate=gate, gate_after=1))
    model = make_gemini(timeout=30)
    with anyio.move_on_after(5) as scope:
        async for item in model.stream(REQUEST):
            assert item == TextDelta("Hel")
            scope.cancel()  # whoever reads stops here, with the stream still open
    gate.set()
    assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))
