"""Code mode and the provider's own programmatic tool calling: with a model that has it
(Anthropic's, against the local fake server), ``run_code`` is left out and every tool sent
may be called from the model's code; with one that has not, ``run_code`` stands in and the
session is told once which models have it; ``native = false`` keeps ``run_code`` always."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from support.fake_llm_server import ANTHROPIC_KEY_ENV, FakeLLMServer, Reply, anthropic_message

from greenroom import PluginWarning, tool
from greenroom import events as ev
from greenroom.config import AgentConfig
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime
from greenroom_anthropic import make_anthropic_model
from greenroom_code import CodeConfig, CodeModePlugin

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeLLMServer]:
    monkeypatch.setenv(ANTHROPIC_KEY_ENV, "sk-ant-test")
    srv = FakeLLMServer().start()
    try:
        yield srv
    finally:
        srv.stop()


def runtime(model: Any, config: CodeConfig | None = None) -> tuple[Runtime, list[ev.Event]]:
    rt = Runtime(
        model=model,
        tools=[add],
        host=make_plugin_host(records=[], extra=[CodeModePlugin(config or CodeConfig())]),
        agent=AgentConfig(max_steps=3),
    )
    events: list[ev.Event] = []
    rt.events.subscribe(events.append)
    return rt, events


def claude(server: FakeLLMServer) -> Any:
    return make_anthropic_model("claude-opus-4-6", {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV})


async def test_a_model_with_its_own_calls_from_code_gets_those_not_run_code(server: FakeLLMServer) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "done"}])))
    model = claude(server)
    rt, events = runtime(model)
    await rt.session().run("add")
    await model.aclose()
    tools = {t.get("name"): t for t in server.requests[0].body["tools"]}
    assert "run_code" not in tools
    assert tools["add"]["allowed_callers"] == ["direct", "code_execution_20260120"]
    assert tools["code_execution"]["type"] == "code_execution_20260120"
    assert not [e for e in events if isinstance(e, PluginWarning)]


async def test_native_off_keeps_run_code_for_a_model_that_has_its_own(server: FakeLLMServer) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "done"}])))
    model = claude(server)
    rt, _ = runtime(model, CodeConfig(native=False))
    await rt.session().run("add")
    await model.aclose()
    tools = {t.get("name"): t for t in server.requests[0].body["tools"]}
    assert "run_code" in tools and "code_execution" not in tools and "allowed_callers" not in tools["add"]


async def test_elsewhere_run_code_stands_in_and_the_session_hears_once_which_models_have_it() -> None:
    rt, events = runtime(ScriptedModel([{"text": "one"}, {"text": "two"}]))
    session = rt.session()
    await session.run("first")
    await session.run("second")
    assert "run_code" in {t.name for t in rt.model.requests[0].tools}
    (warning,) = [e for e in events if isinstance(e, PluginWarning)]
    assert warning.plugin == "code-mode" and "run_code stands in" in warning.message
    assert "Claude Opus and Sonnet 4.5 and later" in warning.message and "programmatic = true" in warning.message
