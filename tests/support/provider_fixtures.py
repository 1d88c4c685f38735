"""Fixtures for the provider tests (core's and each provider plugin's): a fake provider
server per test, fake keys in the environment, a retry policy that records its waits
instead of sleeping (so retry tests take no wall-clock time), and models of the SDK
providers pointed at the server. A ``conftest.py`` imports the ones its tests use."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

import attrs
import pytest

from support.fake_llm_server import ANTHROPIC_KEY_ENV, OPENAI_KEY_ENV, FakeLLMServer, SleepRecorder


@pytest.fixture
def server() -> Iterator[FakeLLMServer]:
    srv = FakeLLMServer().start()
    try:
        yield srv
    finally:
        srv.stop()


@pytest.fixture(autouse=True)
def fake_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(OPENAI_KEY_ENV, "sk-test-openai")
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, "sk-ant-test")


@pytest.fixture
def sleeps() -> SleepRecorder:
    return SleepRecorder()


async def built_models(
    factory: Callable[..., Any], name: str, defaults: dict[str, Any], sleeps: SleepRecorder
) -> AsyncIterator[Callable[..., Any]]:
    """Builds models pointed at the fake server; retries wait on ``sleeps`` (no real
    sleeping), and every client is closed in the test's own event loop."""
    made: list[Any] = []

    def build(**options: Any) -> Any:
        model = factory(name, {**defaults, **options})
        model.retry = attrs.evolve(model.retry, sleep=sleeps)
        made.append(model)
        return model

    yield build
    for model in made:
        await model.aclose()


@pytest.fixture
async def make_anthropic(server: FakeLLMServer, sleeps: SleepRecorder) -> AsyncIterator[Callable[..., Any]]:
    from greenroom_anthropic import make_anthropic_model

    defaults = {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV}
    async for build in built_models(make_anthropic_model, "claude-test", defaults, sleeps):
        yield build


@pytest.fixture
async def make_openai(server: FakeLLMServer, sleeps: SleepRecorder) -> AsyncIterator[Callable[..., Any]]:
    from greenroom_openai import make_openai_model

    defaults = {"base_url": server.url + "/v1", "api_key_env": OPENAI_KEY_ENV}
    async for build in built_models(make_openai_model, "gpt-test", defaults, sleeps):
        yield build


__all__ = ["built_models", "fake_keys", "make_anthropic", "make_openai", "server", "sleeps"]
