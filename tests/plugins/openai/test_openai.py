"""The openai provider against a local server speaking the OpenAI wire format: the exact
request body, tool calls (good and malformed), usage with cached tokens, retries,
errors, timeouts, cancellation, options and the Responses API."""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import anyio
import attrs
import pytest
from support.fake_llm_server import (
    OPENAI_KEY_ENV,
    FakeLLMServer,
    Reply,
    SleepRecorder,
    chat_completion,
    openai_error,
    openai_tool_call,
    responses_object,
)

from greenroom.config import ConfigError
from greenroom.models import Message, ModelError, ModelRequest, SystemSection, ToolCall
from greenroom.providers import (
    MissingApiKeyError,
    MissingExtraError,
    ProviderAuthError,
    ProviderConnectionError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderServerError,
    ProviderTimeoutError,
)
from greenroom.tools import ToolDescriptor
from greenroom_openai import OpenAIChatModel, OpenAIProvider, make_openai_model

pytestmark = pytest.mark.anyio

ADD = ToolDescriptor(
    "add",
    "Add two integers.",
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
)
NOW = ToolDescriptor("now", "The current time.")


@pytest.fixture
def make(make_openai: Callable[..., Any]) -> Callable[..., Any]:
    return make_openai


def history_request() -> ModelRequest:
    """A request with every kind of message: user, assistant calls (one malformed), results."""
    return ModelRequest(
        system=(
            SystemSection("agent", "You are terse."),
            SystemSection("hint", "Step hint that changes.", stable=False),
            SystemSection("catalog", "Deferred tools: weather, stocks."),
            SystemSection("empty", ""),
        ),
        tools=(ADD, NOW),
        messages=(
            Message("user", "add 2 and 3"),
            Message("assistant", "", tool_calls=(ToolCall("call_1", "add", {"a": 2, "b": 3}),)),
            Message("tool", "5", tool_call_id="call_1", name="add"),
            Message("assistant", "Retrying.", tool_calls=(ToolCall("call_2", "add", None, '{"a": 2,'),)),
            Message("tool", "the arguments are not a JSON object", tool_call_id="call_2", name="add", is_error=True),
        ),
        step=3,
    )


async def test_request_body_maps_system_tools_and_history(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=chat_completion("done")))
    await make().complete(history_request())
    (rec,) = server.requests
    assert rec.path == "/v1/chat/completions"
    assert rec.headers["authorization"] == "Bearer sk-test-openai"
    assert rec.body == {
        "model": "gpt-test",
        "messages": [
            # stable sections first, then the changing one; empty sections dropped
            {
                "role": "system",
                "content": "You are terse.\n\nDeferred tools: weather, stocks.\n\nStep hint that changes.",
            },
            {"role": "user", "content": "add 2 and 3"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "call_1", "type": "function", "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "5"},
            {
                "role": "assistant",
                "content": "Retrying.",
                # the model's malformed text goes back verbatim, next to its error result
                "tool_calls": [
                    {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": '{"a": 2,'}}
                ],
            },
            {"role": "tool", "tool_call_id": "call_2", "content": "the arguments are not a JSON object"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {"name": "add", "description": ADD.description, "parameters": dict(ADD.parameters)},
            },
            {
                "type": "function",
                "function": {"name": "now", "description": "The current time.", "parameters": {"type": "object"}},
            },
        ],
    }


async def test_options_shape_the_body_and_empty_tools_are_omitted(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(Reply(body=chat_completion("hi")))
    model = make(temperature=0.2, max_tokens=256, extra_body={"seed": 7})
    await model.complete(ModelRequest(system=(), tools=(), messages=(Message("user", "hi"),)))
    body = server.requests[0].body
    assert "tools" not in body  # the API rejects an empty tools array
    assert body["messages"] == [{"role": "user", "content": "hi"}]  # no system message when there is none
    assert body["temperature"] == 0.2
    assert body["max_completion_tokens"] == 256
    assert body["seed"] == 7


async def test_response_with_tool_calls_and_cached_usage(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(
        Reply(
            body=chat_completion(
                "Let me add.",
                [
                    openai_tool_call("call_a", "add", '{"a": 1, "b": 2}'),
                    openai_tool_call("call_b", "add", '{"a": 1, "b"'),  # cut off mid-object
                    openai_tool_call("call_c", "add", "[1, 2]"),  # JSON, but not an object
                    openai_tool_call("call_d", "now", ""),  # vLLM / Ollama: no parameters
                ],
                prompt_tokens=2048,
                completion_tokens=40,
                cached_tokens=1920,
            )
        )
    )
    response = await make().complete(history_request())
    assert response.message.role == "assistant"
    assert response.message.content == "Let me add."
    assert response.stop_reason == "tool_calls"
    a, b, c, d = response.tool_calls
    assert a == ToolCall("call_a", "add", {"a": 1, "b": 2}, '{"a": 1, "b": 2}')
    assert (b.arguments, b.raw_arguments) == (None, '{"a": 1, "b"')
    assert (c.arguments, c.raw_arguments) == (None, "[1, 2]")
    assert d.arguments == {}
    assert response.usage.input_tokens == 2048
    assert response.usage.output_tokens == 40
    assert response.usage.cached_input_tokens == 1920
    assert response.usage.cache_write_tokens == 0


async def test_429_then_success_honours_retry_after(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.push(
        Reply(
            429,
            openai_error("Rate limit reached for requests", "requests", "rate_limit_exceeded"),
            {"retry-after": "3"},
        ),
        Reply(body=chat_completion("ok")),
    )
    response = await make().complete(history_request())
    assert response.message.content == "ok"
    assert len(server.requests) == 2
    assert sleeps.waits == [3.0]
    assert server.requests[0].raw == server.requests[1].raw  # the same request, resent


async def test_backoff_is_exponential_with_jitter_when_no_retry_after(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.push(*[Reply(503, openai_error("busy", "server_error"))] * 3, Reply(body=chat_completion("ok")))
    model = make(max_retries=3)
    model.retry = attrs.evolve(model.retry, random=lambda: 1.0)  # the most jitter allowed
    assert (await model.complete(history_request())).message.content == "ok"
    assert sleeps.waits == [0.375, 0.75, 1.5]  # 0.5 * 2**n, minus 25 %


async def test_500_after_retries_is_a_clear_model_error(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.responder = lambda rec: Reply(
        500, openai_error("The server had an error processing your request.", "server_error")
    )
    with pytest.raises(ProviderServerError) as info:
        await make(max_retries=2).complete(history_request())
    err = info.value
    assert isinstance(err, ModelError)
    assert err.status == 500
    assert err.attempts == 3
    assert len(server.requests) == 3
    assert len(sleeps.waits) == 2
    assert str(err) == (
        f"openai:gpt-test: HTTP 500 from {server.url}/v1/chat/completions after 3 attempts: "
        "The server had an error processing your request. (server_error)"
    )


@pytest.mark.parametrize(
    ("status", "error_type", "cls"),
    [(400, "invalid_request_error", ProviderRequestError), (401, "invalid_api_key", ProviderAuthError)],
)
async def test_client_errors_are_not_retried(
    server: FakeLLMServer,
    sleeps: SleepRecorder,
    status: int,
    error_type: str,
    cls: type[Exception],
    make: Callable[..., Any],
) -> None:
    server.push(Reply(status, openai_error("Nope: " + error_type, error_type)))
    with pytest.raises(cls, match="Nope: " + error_type) as info:
        await make().complete(history_request())
    assert info.value.status == status  # type: ignore[attr-defined]
    assert len(server.requests) == 1 and sleeps.waits == []


async def test_retry_after_beyond_the_limit_fails_at_once(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.push(Reply(429, openai_error("quota", "insufficient_quota"), {"retry-after": "3600"}))
    with pytest.raises(ProviderRateLimitError) as info:
        await make().complete(history_request())
    assert info.value.retry_after == 3600
    assert len(server.requests) == 1 and sleeps.waits == []


async def test_timeout_is_a_clear_error(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(hang=True))
    started = time.monotonic()
    with pytest.raises(ProviderTimeoutError, match=r"no answer within 0.3 s"):
        await make(timeout=0.3, max_retries=0).complete(history_request())
    assert time.monotonic() - started < 5


async def test_timeout_is_retried(server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]) -> None:
    server.push(Reply(hang=True), Reply(body=chat_completion("second try")))
    response = await make(timeout=0.3, max_retries=1).complete(history_request())
    assert response.message.content == "second try"
    assert len(server.requests) == 2


async def test_a_cancel_scope_cancels_the_http_call(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(hang=True))
    model = make(timeout=30)
    with anyio.move_on_after(0.3) as scope:
        await model.complete(history_request())
    assert scope.cancelled_caught
    # the connection itself was closed, not left running in the background
    assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))


async def test_connection_refused_is_retried_then_reported(sleeps: SleepRecorder, make: Callable[..., Any]) -> None:
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    model = make(base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(ProviderConnectionError, match="connection failed calling") as info:
        await model.complete(history_request())
    assert info.value.status is None and info.value.attempts == 3
    assert len(sleeps.waits) == 2


async def test_missing_key_names_the_variable(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, make: Callable[..., Any]
) -> None:
    monkeypatch.delenv(OPENAI_KEY_ENV)
    model = make()  # building needs no key (greenroom inspect works without one)
    with pytest.raises(MissingApiKeyError, match=OPENAI_KEY_ENV):
        await model.complete(history_request())
    assert server.requests == []


async def test_keyless_local_server(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=chat_completion("from ollama")))
    model = make(api_key_env="")
    assert (await model.complete(history_request())).message.content == "from ollama"


def test_default_key_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    model = make_openai_model("gpt-4o-mini", {"base_dir": "."})
    assert isinstance(model, OpenAIChatModel)
    with pytest.raises(MissingApiKeyError, match="OPENAI_API_KEY"):
        _ = model.client


@pytest.mark.parametrize(
    ("options", "path", "message"),
    [
        ({"api_key": "sk-123"}, "model.api_key", "never read from config files"),
        ({"temprature": 0.1}, "model.temprature", "unknown option"),
        ({"timeout": 0}, "model.timeout", "> 0"),
        ({"max_retries": -1}, "model.max_retries", ">= 0"),
        ({"max_tokens": "many"}, "model.max_tokens", "integer"),
        ({"api": "assistants"}, "model.api", "chat"),
    ],
)
def test_bad_options_name_the_key(options: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        make_openai_model("gpt-test", options)
    assert info.value.path == path


def test_missing_model_name() -> None:
    with pytest.raises(ConfigError, match="openai:MODEL_NAME"):
        make_openai_model("", {})


def test_missing_extra_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "openai", None)  # makes `import openai` fail
    factory = OpenAIProvider().greenroom_model_providers()["openai"]  # the plugin itself still loads
    with pytest.raises(MissingExtraError, match=r"pip install 'greenroom\[openai\]'"):
        factory("gpt-test", {})


# ----------------------------------------------------------------------------- responses


async def test_responses_api_body_and_parse(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(
        Reply(
            body=responses_object(
                [
                    {"type": "reasoning", "id": "rs_1", "summary": []},
                    {
                        "type": "message",
                        "id": "msg_1",
                        "role": "assistant",
                        "status": "completed",
                        "content": [{"type": "output_text", "text": "Adding.", "annotations": []}],
                    },
                    {
                        "type": "function_call",
                        "id": "fc_1",
                        "call_id": "call_9",
                        "name": "add",
                        "arguments": '{"a": 4, "b": 5}',
                        "status": "completed",
                    },
                    {"type": "function_call", "id": "fc_2", "call_id": "call_10", "name": "add", "arguments": "{oops"},
                ],
                input_tokens=1500,
                output_tokens=30,
                cached_tokens=1280,
            )
        )
    )
    response = await make(api="responses", max_tokens=100).complete(history_request())
    rec = server.requests[0]
    assert rec.path == "/v1/responses"
    body = rec.body
    assert body["store"] is False
    assert body["max_output_tokens"] == 100
    assert body["instructions"] == "You are terse.\n\nDeferred tools: weather, stocks.\n\nStep hint that changes."
    assert body["tools"][0] == {
        "type": "function",
        "name": "add",
        "description": ADD.description,
        "parameters": dict(ADD.parameters),
        "strict": False,
    }
    assert body["input"] == [
        {"role": "user", "content": "add 2 and 3"},
        {"type": "function_call", "call_id": "call_1", "name": "add", "arguments": '{"a": 2, "b": 3}'},
        {"type": "function_call_output", "call_id": "call_1", "output": "5"},
        {"role": "assistant", "content": "Retrying."},
        {"type": "function_call", "call_id": "call_2", "name": "add", "arguments": '{"a": 2,'},
        {"type": "function_call_output", "call_id": "call_2", "output": "the arguments are not a JSON object"},
    ]
    assert response.message.content == "Adding."
    good, bad = response.tool_calls
    assert good == ToolCall("call_9", "add", {"a": 4, "b": 5}, '{"a": 4, "b": 5}')
    assert (bad.id, bad.arguments, bad.raw_arguments) == ("call_10", None, "{oops")
    assert (response.usage.input_tokens, response.usage.cached_input_tokens) == (1500, 1280)


async def test_aclose_closes_the_client(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=chat_completion("hi")))
    model = make()
    await model.complete(history_request())
    await model.aclose()
    await model.aclose()  # twice is fine


def cancelled_history() -> ModelRequest:
    """A session whose earlier run was cancelled while its two tools ran (so the calls
    have no results), resumed with a new user message; plus a stray result for no call."""
    return ModelRequest(
        system=(),
        tools=(ADD, NOW),
        messages=(
            Message("user", "add 2 and 3, and tell me the time"),
            Message(
                "assistant", "", tool_calls=(ToolCall("call_1", "add", {"a": 2, "b": 3}), ToolCall("call_2", "now"))
            ),
            Message("tool", "5", tool_call_id="call_1", name="add"),
            Message("user", "never mind, just say hi"),
            Message("tool", "stale", tool_call_id="call_9", name="now"),
        ),
        step=1,
    )


async def test_unanswered_tool_calls_get_a_result_before_the_next_turn(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(Reply(body=chat_completion("hi")))
    await make().complete(cancelled_history())
    messages = server.requests[0].body["messages"]
    assert [(m["role"], m.get("tool_call_id")) for m in messages] == [
        ("user", None),
        ("assistant", None),
        ("tool", "call_1"),
        ("tool", "call_2"),  # the call the cancelled run never answered
        ("user", None),
    ]
    assert messages[2]["content"] == "5"
    assert "did not complete" in messages[3]["content"]


async def test_responses_api_answers_unanswered_calls(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=responses_object([])))
    await make(api="responses").complete(cancelled_history())
    items = server.requests[0].body["input"]
    assert [(i.get("type") or i["role"], i.get("call_id")) for i in items] == [
        ("user", None),
        ("function_call", "call_1"),
        ("function_call", "call_2"),
        ("function_call_output", "call_1"),
        ("function_call_output", "call_2"),
        ("user", None),
    ]
    assert "did not complete" in items[4]["output"]


async def test_credentials_in_base_url_stay_out_of_errors_and_logs(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    # a proxy behind basic auth: the password is in the URL's user info
    base_url = server.url.replace("http://", "http://agent:pr0xy-s3cret@") + "/v1"
    server.push(Reply(503, openai_error("busy", "server_error")), Reply(400, openai_error("bad", "invalid_request")))
    model = make(base_url=base_url, max_retries=1)
    with caplog.at_level("DEBUG", logger="greenroom"), pytest.raises(ProviderRequestError) as info:
        await model.complete(history_request())
    assert f"from {server.url}/v1/chat/completions" in str(info.value)  # still names the endpoint
    assert len(sleeps.waits) == 1  # the 503 was logged as a retry
    for text in (str(info.value), info.value.endpoint, caplog.text, repr(model)):
        assert "pr0xy-s3cret" not in text
