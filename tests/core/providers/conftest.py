"""Fixtures for the provider tests: an anyio backend, a fake provider server per test,
fake keys in the environment, and a retry policy that records its waits instead of
sleeping (so retry tests take no wall-clock time)."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest

# the fake server lives beside these tests; with --import-mode=importlib this folder is
# not on sys.path by itself
sys.path.insert(0, str(Path(__file__).resolve().parent))

from fake_llm_server import ANTHROPIC_KEY_ENV, OPENAI_KEY_ENV, FakeLLMServer, SleepRecorder


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


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


@pytest.fixture
async def make_anthropic(server: FakeLLMServer, sleeps: SleepRecorder) -> AsyncIterator[Callable[..., Any]]:
    """Builds Anthropic models pointed at the fake server; retries wait on ``sleeps``, and
    every client is closed in the test's own event loop."""
    from greenroom.providers.anthropic import make_anthropic_model

    made: list[Any] = []

    def build(**options: Any) -> Any:
        options = {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV, **options}
        model = make_anthropic_model("claude-test", options)
        model.retry = attrs.evolve(model.retry, sleep=sleeps)
        made.append(model)
        return model

    yield build
    for model in made:
        await model.aclose()
