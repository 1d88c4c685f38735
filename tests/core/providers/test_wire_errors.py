"""Answers that are not the API at all (a wrong ``base_url``, a proxy's error page, a
broken body) become clear ``ProviderError`` messages for both providers, never a bare
decoder exception."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
from support.fake_llm_server import FakeLLMServer, Reply

from greenroom.models import Message, ModelRequest
from greenroom.providers import ProviderRequestError, ProviderResponseError
from greenroom_anthropic import make_anthropic_model
from greenroom_openai import make_openai_model

pytestmark = pytest.mark.anyio

REQUEST = ModelRequest(system=(), tools=(), messages=(Message("user", "hi"),))


@pytest.fixture(params=["openai", "anthropic"])
async def make(request: pytest.FixtureRequest, server: FakeLLMServer) -> AsyncIterator[Callable[[], Any]]:
    made: list[Any] = []

    def build() -> Any:
        options = {"api_key_env": "", "max_retries": 0}
        if request.param == "openai":
            model = make_openai_model("m", {"base_url": server.url + "/v1", **options})
        else:
            model = make_anthropic_model("m", {"base_url": server.url, **options})
        made.append(model)
        return model

    yield build
    for model in made:
        await model.aclose()


async def test_a_404_at_a_wrong_base_url_names_the_endpoint(server: FakeLLMServer, make: Callable[[], Any]) -> None:
    server.push(Reply(404, "404 page not found", content_type="text/plain"))
    with pytest.raises(ProviderRequestError) as info:
        await make().complete(REQUEST)
    message = str(info.value)
    assert f"HTTP 404 from {server.url}/v1/" in message and message.endswith(": 404 page not found")


async def test_a_web_page_instead_of_json(server: FakeLLMServer, make: Callable[[], Any]) -> None:
    server.push(Reply(200, "<html><body>Welcome to nginx!</body></html>", content_type="text/html"))
    with pytest.raises(
        ProviderResponseError, match=r"expected JSON, got text: '<html><body>Welcome to nginx!.*base_url"
    ):
        await make().complete(REQUEST)


async def test_a_body_labelled_json_that_is_not(server: FakeLLMServer, make: Callable[[], Any]) -> None:
    server.push(Reply(200, '{"id": "cut off'))
    with pytest.raises(ProviderResponseError, match="not valid JSON"):
        await make().complete(REQUEST)


async def test_json_of_the_wrong_shape(server: FakeLLMServer, make: Callable[[], Any]) -> None:
    server.push(Reply(200, {"unexpected": True}))
    with pytest.raises(ProviderResponseError, match="unusable response: the response has no"):
        await make().complete(REQUEST)
