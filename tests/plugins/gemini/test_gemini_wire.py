"""Answers that are not the API (a wrong ``base_url``, a proxy's error page, a broken
body), an API key echoed back by a server, and tool-call arguments nested 1,000 levels
deep: each becomes a clear error or an error result, never a bare exception, and the
key never leaves greenroom."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import pytest
from support.fake_llm_server import (
    GEMINI_KEY_ENV,
    SSE,
    FakeLLMServer,
    Reply,
    SleepRecorder,
    gemini_call,
    gemini_error,
    gemini_response,
)

from greenroom import Message, ModelRequest, ProviderToolCallError, Runtime, tool
from greenroom.kit import MAX_ARGUMENT_DEPTH
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers import ProviderAuthError, ProviderRequestError, ProviderResponseError, ProviderServerError

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(system=(), tools=(), messages=(Message("user", "hi"),))
KEY = "AIzaSyLIVE0123456789abcdefSECRET"


async def test_a_404_at_a_wrong_base_url_names_the_endpoint(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(404, "404 page not found", content_type="text/plain"))
    with pytest.raises(ProviderRequestError) as info:
        await make_gemini(max_retries=0).complete(REQUEST)
    message = str(info.value)
    path = server.requests[0].path
    assert path.endswith("/models/gemini-test:generateContent") and f"HTTP 404 from {server.url}{path}" in message
    assert message.endswith(": 404 page not found")


async def test_a_web_page_instead_of_json(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(200, "<html><body>Welcome to nginx!</body></html>", content_type="text/html"))
    with pytest.raises(
        ProviderResponseError, match=r"expected JSON, got text: '<html><body>Welcome to nginx!.*base_url"
    ):
        await make_gemini(max_retries=0).complete(REQUEST)


async def test_a_body_labelled_json_that_is_not(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(200, '{"candidates": [cut off'))
    with pytest.raises(ProviderResponseError, match="not valid JSON"):
        await make_gemini(max_retries=0).complete(REQUEST)


async def test_json_of_the_wrong_shape(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(200, {"unexpected": True}))
    with pytest.raises(ProviderResponseError, match="unusable response: the response has no candidates"):
        await make_gemini(max_retries=0).complete(REQUEST)


# ----------------------------------------------------------------------------- the key


@pytest.fixture
def live_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GEMINI_KEY_ENV, KEY)


def echo(status: int) -> Reply:
    """What a careless proxy sends: the key quoted back."""
    return Reply(
        status, gemini_error(status, f"API key not valid: x-goog-api-key={KEY}", "INVALID"), {"retry-after": "0"}
    )


async def test_an_error_that_echoes_the_key(
    server: FakeLLMServer, make_gemini: Callable[..., Any], live_key: None
) -> None:
    server.push(echo(401))
    with pytest.raises(ProviderAuthError) as info:
        await make_gemini().complete(REQUEST)
    assert KEY not in str(info.value) and "x-goog-api-key=***" in str(info.value)
    assert KEY not in info.value.detail and info.value.status == 401
    # the SDK's exception (whose message quotes the body) is not chained to it either
    assert info.value.__cause__ is None and info.value.__suppress_context__


async def test_500s_that_echo_the_key_stay_out_of_the_retry_log(
    server: FakeLLMServer, make_gemini: Callable[..., Any], live_key: None, caplog: pytest.LogCaptureFixture
) -> None:
    server.push(echo(500), echo(503), echo(500))
    with caplog.at_level(logging.WARNING, logger="greenroom.providers"), pytest.raises(ProviderServerError) as info:
        await make_gemini(max_retries=2).complete(REQUEST)
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and all("x-goog-api-key=***" in r.getMessage() for r in retries)
    assert KEY not in caplog.text and KEY not in str(info.value) and info.value.attempts == 3


async def test_a_page_that_is_not_json_and_quotes_the_key(
    server: FakeLLMServer, make_gemini: Callable[..., Any], live_key: None
) -> None:
    server.push(Reply(200, f"<html>debug: x-goog-api-key={KEY}</html>", content_type="text/html"))
    with pytest.raises(ProviderResponseError, match=r"expected JSON, got text") as info:
        await make_gemini().complete(REQUEST)
    assert KEY not in str(info.value) and "x-goog-api-key=***" in str(info.value)


# ----------------------------------------------------------------------------- deep arguments


def deep(levels: int) -> str:
    """``{"data": {"a": {"a": ...}}}`` as JSON text, ``levels`` objects deep."""
    return '{"data":' + '{"a":' * (levels - 2) + "{}" + "}" * (levels - 1)


def deep_call(levels: int, call_id: str) -> str:
    """A response whose one call has arguments ``levels`` deep, as the API's JSON text."""
    body = json.dumps(gemini_response([gemini_call("store", "ARGS", call_id=call_id)]))
    return body.replace('"ARGS"', deep(levels))


@tool
def store(data: dict) -> str:  # type: ignore[type-arg]
    """Store a document."""
    return "stored"


async def test_arguments_nested_too_deeply_become_an_error_result(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    server.push(
        Reply(body=deep_call(MAX_ARGUMENT_DEPTH + 50, "fc_1")),
        Reply(body=gemini_response([gemini_call("store", {"data": {"ok": True}}, call_id="fc_2")])),
        Reply(body=gemini_response([{"text": "done"}])),
    )
    runtime = Runtime(model=make_gemini(), tools=[store], host=make_plugin_host(records=[]))
    session = runtime.session()
    outcome = await session.run("store it")
    assert (outcome.stop_reason, outcome.text) == ("final", "done")
    first, second = [m for m in session.messages if m.role == "tool"]
    assert first.is_error and f"more than {MAX_ARGUMENT_DEPTH} levels" in first.content
    assert second.content == "stored"
    replayed = server.requests[1].body["contents"]
    assert replayed[1]["parts"] == [{"functionCall": {"id": "fc_1", "name": "store", "args": {}}}]
    assert "nested too deeply" in replayed[2]["parts"][0]["functionResponse"]["response"]["error"]


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_an_answer_too_deep_to_read_is_asked_again(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any], streamed: bool
) -> None:
    """1,000 levels: more than Python's JSON reader can follow."""
    ok = gemini_response([{"text": "ok"}])
    if streamed:
        server.push(Reply(stream=[SSE(deep_call(1_000, "fc_1"))]), Reply(stream=[SSE(ok)]))
        items = [item async for item in make_gemini().stream(REQUEST)]
        response = items[-1]
    else:
        server.push(Reply(body=deep_call(1_000, "fc_1")), Reply(body=ok))
        response = await make_gemini().complete(REQUEST)
    assert response.message.content == "ok"  # type: ignore[union-attr]
    assert len(server.requests) == 2 and len(sleeps.waits) == 1

    server.responder = lambda rec: Reply(body=deep_call(1_000, "fc_1"))
    with pytest.raises(ProviderToolCallError, match="nested too deeply to read"):
        await make_gemini(max_retries=0).complete(REQUEST)
