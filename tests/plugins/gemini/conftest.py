"""Fixtures for the Gemini provider's tests: the fake provider server and the retry policy
that records its waits instead of sleeping (tests/support/provider_fixtures.py), a fake
key, and Gemini models pointed at the server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any

import attrs
import pytest
from support.fake_llm_server import GEMINI_KEY_ENV, FakeLLMServer, SleepRecorder
from support.provider_fixtures import server, sleeps

KEY = "AIza-test-gemini-key"


@pytest.fixture(autouse=True)
def fake_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(GEMINI_KEY_ENV, KEY)
    # what the SDK would read on its own: the provider must not
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY", "GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_GENAI_API_VERSION"):
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def make_gemini(server: FakeLLMServer, sleeps: SleepRecorder) -> AsyncIterator[Callable[..., Any]]:
    """Builds ``gemini:gemini-test`` models pointed at the fake server; retries wait on
    ``sleeps``, and every client is closed in the test's own event loop."""
    from greenroom_gemini import make_gemini_model

    made: list[Any] = []

    def build(name: str = "gemini-test", **options: Any) -> Any:
        model = make_gemini_model(name, {"base_url": server.url, "api_key_env": GEMINI_KEY_ENV, **options})
        model.retry = attrs.evolve(model.retry, sleep=sleeps)
        made.append(model)
        return model

    yield build
    for model in made:
        await model.aclose()


__all__ = ["fake_key", "make_gemini", "server", "sleeps"]
