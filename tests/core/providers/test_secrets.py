"""The API key never leaves greenroom in text a server or an SDK wrote: an OpenAI-compatible
server that echoes the key in a 401 or a 500 body (or in a page that is not JSON), an SDK
exception quoting it. Neither the raised error, the retry log nor the CLI's output holds it."""

from __future__ import annotations

import base64
import gc
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import typer
from hypothesis import given
from hypothesis import strategies as st
from support.fake_llm_server import (
    ANTHROPIC_KEY_ENV,
    OPENAI_KEY_ENV,
    FakeLLMServer,
    Reply,
    anthropic_error,
    openai_error,
)
from typer.testing import CliRunner

from greenroom._support.redact import Redactor, redact_known, remember_secrets
from greenroom.cli import app
from greenroom.cli.app import fail
from greenroom.models import Message, ModelRequest
from greenroom.providers import ProviderAuthError, ProviderError, ProviderResponseError, ProviderServerError

KEY = "sk-live-0123456789abcdefSECRET"
REQUEST = ModelRequest(system=(), tools=(), messages=(Message("user", "hi"),))
NO_WAIT = {"retry-after-ms": "0"}  # retry at once: the test needs the retries, not the waits


@pytest.fixture(autouse=True)
def real_looking_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OPENAI_KEY_ENV, KEY)
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, KEY)


def echo(provider: str, status: int) -> Reply:
    """What a careless compatible server sends: the Authorization header quoted back."""
    message = f"Incorrect API key provided: Bearer {KEY} (status {status})"
    body = openai_error(message, "invalid_request_error") if provider == "openai" else anthropic_error("error", message)
    return Reply(status, body, headers=NO_WAIT)


def builder(provider: str, make_openai: Callable[..., Any], make_anthropic: Callable[..., Any]) -> Callable[..., Any]:
    return make_openai if provider == "openai" else make_anthropic


PROVIDERS = pytest.mark.parametrize("provider", ["openai", "anthropic"])
pytestmark = pytest.mark.anyio


@PROVIDERS
async def test_a_401_that_echoes_the_key(
    provider: str, server: FakeLLMServer, make_openai: Any, make_anthropic: Any
) -> None:
    server.push(echo(provider, 401))
    with pytest.raises(ProviderAuthError) as info:
        await builder(provider, make_openai, make_anthropic)().complete(REQUEST)
    message = str(info.value)
    assert KEY not in message and "Incorrect API key provided: Bearer ***" in message
    assert KEY not in info.value.detail and info.value.status == 401
    # the SDK's exception (whose message quotes the body) is not chained to it either
    assert info.value.__cause__ is None and info.value.__suppress_context__


@PROVIDERS
async def test_500s_that_echo_the_key_stay_out_of_the_retry_log(
    provider: str, server: FakeLLMServer, make_openai: Any, make_anthropic: Any, caplog: pytest.LogCaptureFixture
) -> None:
    server.push(echo(provider, 500), echo(provider, 503), echo(provider, 500))
    with caplog.at_level(logging.WARNING, logger="greenroom.providers"), pytest.raises(ProviderServerError) as info:
        await builder(provider, make_openai, make_anthropic)(max_retries=2).complete(REQUEST)
    retries = [r for r in caplog.records if "retrying" in r.getMessage()]
    assert len(retries) == 2 and len(server.requests) == 3
    assert all("Bearer ***" in r.getMessage() for r in retries)
    assert KEY not in caplog.text and KEY not in str(info.value)
    assert info.value.attempts == 3


@PROVIDERS
async def test_a_page_that_is_not_json_and_quotes_the_key(
    provider: str, server: FakeLLMServer, make_openai: Any, make_anthropic: Any
) -> None:
    server.push(Reply(200, f"<html>debug: authorization=Bearer {KEY}</html>", content_type="text/html"))
    with pytest.raises(ProviderResponseError, match=r"expected JSON, got text") as info:
        await builder(provider, make_openai, make_anthropic)().complete(REQUEST)
    assert KEY not in str(info.value) and "Bearer ***" in str(info.value)


async def test_an_sdk_exception_that_is_not_an_api_error_is_named_and_clean(make_openai: Any) -> None:
    model = make_openai()

    async def broken_send(client: Any, body: dict[str, Any]) -> Any:
        raise ValueError(f"cannot encode header 'Authorization: Bearer {KEY}'")

    model.send = broken_send
    with pytest.raises(ProviderError) as info:
        await model.complete(REQUEST)
    message = str(info.value)
    assert message.startswith("openai:gpt-test: request failed: ValueError: cannot encode header")
    assert KEY not in message and "Bearer ***" in message and not info.value.retryable


# ----------------------------------------------------------------------------- the CLI


def write_config(tmp_path: Path, provider: str, server: FakeLLMServer) -> Path:
    base_url = server.url + "/v1" if provider == "openai" else server.url
    key_env = OPENAI_KEY_ENV if provider == "openai" else ANTHROPIC_KEY_ENV
    config = tmp_path / "agent.toml"
    config.write_text(
        f'[agent]\nmodel = "{provider}:test-model"\nmax_steps = 2\n\n'
        f"[model]\nbase_url = {json.dumps(base_url)}\napi_key_env = {json.dumps(key_env)}\nmax_retries = 1\n\n"
        '[plugins]\ndisable = ["priors-persistence"]\n'
    )
    return config


@PROVIDERS
@pytest.mark.parametrize("status", [401, 500])
def test_the_cli_never_prints_the_key(
    tmp_path: Path, server: FakeLLMServer, provider: str, status: int, caplog: pytest.LogCaptureFixture
) -> None:
    server.push(echo(provider, status), echo(provider, status))
    config = write_config(tmp_path, provider, server)
    trace = tmp_path / "trace.jsonl"
    with caplog.at_level(logging.WARNING):
        result = CliRunner().invoke(app, ["run", str(config), "hi", "-q", "--trace", str(trace)])
    gc.collect()  # the SDK client is collected while no event loop runs (see test_cli_run)
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert f"HTTP {status} from {server.url}" in output and "Bearer ***" in output
    assert len(server.requests) == (1 if status == 401 else 2)  # a 401 is not retried
    for text in (result.output, caplog.text, trace.read_text() if trace.exists() else ""):
        assert KEY not in text


@PROVIDERS
def test_the_base_url_user_info_is_masked_in_every_form_a_server_echoes(
    tmp_path: Path, server: FakeLLMServer, provider: str, caplog: pytest.LogCaptureFixture
) -> None:
    # base_url's user info is sent as a Basic header (base64 of user:password), and a
    # careless server quotes the header back: neither that nor the password is shown
    password = "pw-0123456789-SECRET"
    heard: list[str] = []

    def quote_the_header(request: Any) -> Reply:
        heard.append(request.headers.get("authorization", ""))
        message = f"Authorization: {heard[-1]} was refused for user svc:{password}"
        body = openai_error(message, "invalid_request_error") if provider == "openai" else anthropic_error("e", message)
        return Reply(401, body)

    server.responder = quote_the_header
    config = write_config(tmp_path, provider, server)
    config.write_text(config.read_text().replace("http://", f"http://svc:{password}@", 1))
    trace = tmp_path / "trace.jsonl"
    with caplog.at_level(logging.WARNING):
        result = CliRunner().invoke(app, ["run", str(config), "hi", "-q", "--trace", str(trace)])
    gc.collect()
    assert result.exit_code == 1, result.output
    basic = base64.b64encode(f"svc:{password}".encode()).decode()
    assert heard == [f"Basic {basic}"]  # what the HTTP client made of the user info
    assert "Authorization: Basic *** was refused for user svc:***" in " ".join(result.output.split())
    for text in (result.output, caplog.text, trace.read_text()):
        assert basic not in text and password not in text
    # remembered for every later text too, the user name alone excepted: it is no secret
    assert redact_known(f"svc sent {basic}, {password}") == "svc sent ***, ***"


# ----------------------------------------------------------------------------- the redactor


@given(before=st.text(), secret=st.text(min_size=4), after=st.text(), other=st.text(min_size=4))
def test_no_secret_survives_redaction(before: str, secret: str, after: str, other: str) -> None:
    # whatever surrounds it, and whatever masking its neighbours joins together
    redact = Redactor([secret, other])
    out = redact(before + secret + after + other + secret)
    assert secret not in out and other not in out


async def test_the_key_is_masked_in_every_text_once_a_model_has_read_it(make_openai: Any) -> None:
    model = make_openai()
    assert model.client is not None  # reading the key (when the client is made) makes it known
    assert redact_known(f"an error quoting {KEY}!") == "an error quoting ***!"
    # a server's redactor hides its own values and the key, which its stderr may quote too
    assert Redactor(["tok-123456"])(f"{KEY} and tok-123456") == "*** and ***"


def test_the_cli_masks_a_known_key_in_any_error_it_prints(capsys: pytest.CaptureFixture[str]) -> None:
    # whatever road a message took (a plugin or a tool quoting an SDK's text), the key a
    # model client read is hidden in what the CLI prints
    remember_secrets([KEY])
    with pytest.raises(typer.Exit):
        fail(f"plugin 'p' failed: RuntimeError: Authorization: Bearer {KEY}")
    err = capsys.readouterr().err
    assert KEY not in err and "Authorization: Bearer ***" in err
