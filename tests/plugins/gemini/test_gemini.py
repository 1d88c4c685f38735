"""The gemini provider against a local server speaking the Gemini API's wire format:
the generateContent body (system instruction, function declarations, contents with
function calls and responses), the response's calls and usage with cached and thinking
tokens, retries, errors, timeouts, cancellation, the key and the extra."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import pytest
from support.fake_llm_server import (
    GEMINI_KEY_ENV,
    FakeLLMServer,
    Reply,
    SleepRecorder,
    gemini_call,
    gemini_error,
    gemini_response,
)

from greenroom import ConfigError, Message, ModelError, ModelRequest, SystemSection, ToolCall, ToolDescriptor
from greenroom.providers import (
    MissingApiKeyError,
    MissingExtraError,
    ProviderAuthError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderServerError,
    ProviderTimeoutError,
)
from greenroom_gemini import GeminiProvider, make_gemini_model

pytestmark = pytest.mark.anyio

ADD = ToolDescriptor(
    "add",
    "Add two integers.",
    {
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
        "additionalProperties": False,
    },
)
NOW = ToolDescriptor("now", "The current time.")
OK = gemini_response([{"text": "ok"}])


def request() -> ModelRequest:
    return ModelRequest(
        system=(
            SystemSection("agent", "You are terse."),
            SystemSection("hint", "Step 3 of 20.", stable=False),
            SystemSection("catalog", "Deferred tools: weather, stocks."),
        ),
        tools=(ADD, NOW),
        messages=(
            Message("user", "add 2 and 3, and tell me the time"),
            Message(
                "assistant", "On it.", tool_calls=(ToolCall("c1", "add", {"a": 2, "b": 3}), ToolCall("c2", "now", {}))
            ),
            Message("tool", "5", tool_call_id="c1", name="add"),
            Message("tool", "clock unavailable", tool_call_id="c2", name="now", is_error=True),
        ),
        step=2,
    )


async def test_request_body(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    await make_gemini(temperature=0.0, max_tokens=512).complete(request())
    (rec,) = server.requests
    assert rec.path.endswith("/models/gemini-test:generateContent") and "alt=sse" not in rec.path
    key = os.environ[GEMINI_KEY_ENV]
    assert rec.headers["x-goog-api-key"] == key and key not in rec.path
    assert rec.body == {
        "contents": [
            {"role": "user", "parts": [{"text": "add 2 and 3, and tell me the time"}]},
            {
                "role": "model",
                "parts": [
                    {"text": "On it."},
                    {"functionCall": {"id": "c1", "name": "add", "args": {"a": 2, "b": 3}}},
                    {"functionCall": {"id": "c2", "name": "now", "args": {}}},
                ],
            },
            {
                # both responses in the turn right after the calls, in their order
                "role": "user",
                "parts": [
                    {"functionResponse": {"id": "c1", "name": "add", "response": {"output": "5"}}},
                    {"functionResponse": {"id": "c2", "name": "now", "response": {"error": "clock unavailable"}}},
                ],
            },
        ],
        # stable sections first, the one that changes last
        "systemInstruction": {
            "parts": [{"text": "You are terse.\n\nDeferred tools: weather, stocks.\n\nStep 3 of 20."}]
        },
        "tools": [
            {
                "functionDeclarations": [
                    # the JSON Schema whole (additionalProperties included), not the OpenAPI subset
                    {"name": "add", "description": "Add two integers.", "parametersJsonSchema": dict(ADD.parameters)},
                    {"name": "now", "description": "The current time.", "parametersJsonSchema": {"type": "object"}},
                ]
            }
        ],
        "generationConfig": {"temperature": 0.0, "maxOutputTokens": 512},
    }


async def test_a_bare_request_sends_no_empty_parts(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    bare = ModelRequest(
        system=(SystemSection("notes", ""),),
        tools=(),
        messages=(
            Message("user", ""),
            Message("assistant", "", tool_calls=(ToolCall("c1", "now", {}),)),
            Message("tool", "", tool_call_id="c1", name="now"),
        ),
    )
    await make_gemini().complete(bare)
    body = server.requests[0].body
    # no system, no tools; the SDK adds its own empty generationConfig
    assert "systemInstruction" not in body and "tools" not in body and not body.get("generationConfig")
    assert body["contents"][0] == {"role": "user", "parts": [{"text": "(no content)"}]}
    assert body["contents"][1]["parts"] == [{"functionCall": {"id": "c1", "name": "now", "args": {}}}]


async def test_response_with_calls_and_usage(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(
        Reply(
            body=gemini_response(
                [
                    {"text": "Adding."},
                    gemini_call("add", {"a": 4, "b": 5}, call_id="fc_9"),
                    gemini_call("now", {}),  # no id: one is made for the run to answer by
                ],
                prompt_tokens=2000,
                cached_tokens=1800,
                output_tokens=40,
                thoughts_tokens=25,
            )
        )
    )
    response = await make_gemini().complete(request())
    assert response.message.content == "Adding."
    assert response.stop_reason == "STOP"
    assert response.tool_calls == (ToolCall("fc_9", "add", {"a": 4, "b": 5}), ToolCall("call_2_2", "now", {}))
    assert response.message.provider_content is None  # nothing the API wants back as it was
    usage = response.usage
    # the prompt counts its cached part; thinking is billed as output
    assert (usage.input_tokens, usage.cached_input_tokens, usage.output_tokens) == (2000, 1800, 65)
    assert usage.cache_write_tokens == 0


async def test_unanswered_calls_get_a_result_before_the_next_turn(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(body=OK))
    history = ModelRequest(
        system=(),
        tools=(ADD, NOW),
        messages=(
            Message("user", "add 2 and 3, and tell me the time"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "add", {"a": 2, "b": 3}), ToolCall("c2", "now", {}))),
            Message("user", "never mind, just say hi"),
            Message("tool", "stale", tool_call_id="c9", name="now"),
        ),
    )
    await make_gemini().complete(history)
    turns = server.requests[0].body["contents"]
    assert [t["role"] for t in turns] == ["user", "model", "user"]
    responses = [p["functionResponse"] for p in turns[2]["parts"][:2]]
    assert [(r["id"], r["name"]) for r in responses] == [("c1", "add"), ("c2", "now")]  # names from the calls
    assert all("did not complete" in r["response"]["error"] for r in responses)
    assert turns[2]["parts"][2] == {"text": "never mind, just say hi"}


@pytest.mark.parametrize(
    "failure",
    [
        Reply(429, gemini_error(429, "Resource has been exhausted (e.g. check quota).", "RESOURCE_EXHAUSTED")),
        Reply(500, gemini_error(500, "An internal error has occurred.", "INTERNAL")),
        Reply(503, gemini_error(503, "The model is overloaded. Please try again later.", "UNAVAILABLE")),
    ],
    ids=["429", "500", "503"],
)
async def test_transient_error_then_success(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any], failure: Reply
) -> None:
    server.push(failure, Reply(body=gemini_response([{"text": "ok"}], cached_tokens=900)))
    response = await make_gemini().complete(request())
    assert (response.message.content, response.usage.cached_input_tokens) == ("ok", 900)
    assert len(server.requests) == 2 and server.requests[0].raw == server.requests[1].raw
    assert len(sleeps.waits) == 1 and 0.375 <= sleeps.waits[0] <= 0.5  # backoff: no wait was asked for


async def test_a_429_waits_as_long_as_its_retry_info_asks(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
    server.push(
        Reply(
            429, gemini_error(429, "Quota exceeded for metric: generate_content_requests", "RESOURCE_EXHAUSTED", [info])
        ),
        Reply(429, gemini_error(429, "slow down", "RESOURCE_EXHAUSTED"), {"retry-after": "2"}),
        Reply(body=OK),
    )
    assert (await make_gemini().complete(request())).message.content == "ok"
    assert sleeps.waits == [7.0, 2.0]


async def test_errors_carry_status_and_the_apis_message(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    server.responder = lambda rec: Reply(500, gemini_error(500, "An internal error has occurred.", "INTERNAL"))
    with pytest.raises(ProviderServerError) as error:
        await make_gemini(max_retries=1).complete(request())
    assert isinstance(error.value, ModelError)
    assert (error.value.status, error.value.attempts) == (500, 2)
    assert str(error.value) == (
        f"gemini:gemini-test: HTTP 500 from {server.url}{server.requests[0].path} after 2 attempts: "
        "An internal error has occurred. (INTERNAL)"
    )

    server.responder = None
    bad = gemini_error(400, 'Invalid JSON payload received. Unknown name "foo"', "INVALID_ARGUMENT")
    server.push(Reply(400, bad))
    with pytest.raises(ProviderRequestError, match='Unknown name "foo" \\(INVALID_ARGUMENT\\)'):
        await make_gemini().complete(request())

    server.push(Reply(403, gemini_error(403, "Method doesn't allow unregistered callers.", "PERMISSION_DENIED")))
    with pytest.raises(ProviderAuthError, match="PERMISSION_DENIED"):
        await make_gemini().complete(request())

    info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "3600s"}
    server.push(Reply(429, gemini_error(429, "Quota exceeded", "RESOURCE_EXHAUSTED", [info])))
    with pytest.raises(ProviderRateLimitError, match="Quota exceeded") as limited:
        await make_gemini().complete(request())
    assert limited.value.retry_after == 3600 and limited.value.attempts == 1  # too long to wait: raised at once


async def test_timeout(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(hang=True))
    with pytest.raises(ProviderTimeoutError, match=r"^gemini:gemini-test: timed out calling .*within 0\.3 s"):
        await make_gemini(timeout=0.3, max_retries=0).complete(request())


async def test_a_cancel_scope_cancels_the_http_call(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    model = make_gemini(timeout=30)
    await model.complete(request())  # the SDK is loaded and connected outside the window
    server.push(Reply(hang=True))
    with anyio.move_on_after(0.3) as scope:
        await model.complete(request())
    assert scope.cancelled_caught
    assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))


async def test_missing_key(
    server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, make_gemini: Callable[..., Any]
) -> None:
    monkeypatch.delenv(GEMINI_KEY_ENV)
    monkeypatch.setenv("GOOGLE_API_KEY", "AIza-other")  # the SDK would take it: greenroom reads one variable
    with pytest.raises(MissingApiKeyError, match=GEMINI_KEY_ENV):
        await make_gemini().complete(request())
    assert server.requests == []


def test_the_default_key_variable_is_gemini_api_key(monkeypatch: pytest.MonkeyPatch) -> None:
    model: Any = make_gemini_model("gemini-2.5-flash", {})
    assert model.options.api_key_env == "GEMINI_API_KEY" and model.native_tool_search is False
    monkeypatch.setenv("GEMINI_API_KEY", "AIza-from-env")
    client = model.client
    assert client._api_client.api_key == "AIza-from-env" and not client._api_client.vertexai
    anyio.run(model.aclose)


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"images": "yes"}, "model.images"),
        ({"thinking": True}, "model.thinking"),
        ({"thinking": {"budget": 10}}, "model.thinking.budget"),
        ({"thinking": {"thinking_budget": "lots"}}, "model.thinking.thinking_budget"),
        ({"thinking": {"thinking_level": "huge"}}, "model.thinking.thinking_level"),
        ({"thinking": {"include_thoughts": 1}}, "model.thinking.include_thoughts"),
        ({"api_key": "AIza-x"}, "model.api_key"),
        ({"tool_search": "bm25"}, "model.tool_search"),
    ],
)
def test_bad_options_name_the_key(options: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_gemini_model("gemini-test", options)
    assert info.value.path == path


async def test_thinking_config_is_sent(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    await make_gemini(thinking={"thinking_level": "low", "include_thoughts": True}).complete(request())
    config = server.requests[0].body["generationConfig"]
    assert config == {"thinkingConfig": {"thinkingLevel": "low", "includeThoughts": True}}


async def test_extra_body_is_merged_over_the_body(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    model = make_gemini(extra_body={"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}})
    await model.complete(request())
    assert server.requests[0].body["toolConfig"] == {"functionCallingConfig": {"mode": "ANY"}}


def test_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "google.genai", None)
    factory = GeminiProvider().greenroom_model_providers()["gemini"]
    with pytest.raises(MissingExtraError, match=r"pip install 'greenroom\[gemini\]'"):
        factory("gemini-test", {})


def test_the_model_name_is_required() -> None:
    with pytest.raises(ConfigError, match="gemini:MODEL"):
        make_gemini_model("", {})


def test_the_provider_is_an_installed_plugin(monkeypatch: pytest.MonkeyPatch) -> None:
    from greenroom.plugins.discovery import discover

    record = {r.name: r for r in discover()}["gemini"]
    assert record.cls is GeminiProvider and record.failure is None
    assert GeminiProvider.unusable() is None
    monkeypatch.setitem(sys.modules, "google.genai", None)
    monkeypatch.setattr("importlib.util.find_spec", lambda name: None)
    assert GeminiProvider.unusable() == (
        "the gemini provider needs the 'google.genai' package: pip install 'greenroom[gemini]'"
    )
