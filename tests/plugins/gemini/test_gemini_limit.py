"""Gemini takes at most 512 function declarations in a request. A request with more tools
sends 512: the tools no plugin placed (a deferring plugin's search tool) and, among the
others, those with the highest learned priority; one warning per session says how many
were left out, and the tools array stays the same bytes from step to step."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from support.fake_llm_server import FakeLLMServer, Recorded, Reply, gemini_call, gemini_response

from greenroom import CatalogTool, Message, ModelRequest, PluginWarning, ToolDescriptor, ToolPriors, tool
from greenroom import events as ev
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_gemini import GeminiProvider

pytestmark = pytest.mark.anyio

CATALOG = [ToolDescriptor(f"t{i:03}", f"Tool number {i}.") for i in range(600)]


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def declared(rec: Recorded) -> list[str]:
    return [d["name"] for d in rec.body["tools"][0]["functionDeclarations"]]


def answer(rec: Recorded) -> Reply:
    """Step 1 calls add, step 2 answers."""
    if len(rec.body["contents"]) == 1:
        return Reply(body=gemini_response([gemini_call("add", {"a": 2, "b": 3}, call_id="fc_1")]))
    return Reply(body=gemini_response([{"text": "5"}]))


async def test_outside_a_run_the_first_512_are_sent(
    server: FakeLLMServer, make_gemini: Callable[..., Any], caplog: pytest.LogCaptureFixture
) -> None:
    server.responder = lambda rec: Reply(body=gemini_response([{"text": "ok"}]))
    model = make_gemini()
    request = ModelRequest(system=(), tools=tuple(CATALOG), messages=(Message("user", "hi"),))
    with caplog.at_level(logging.WARNING, logger="greenroom.providers"):
        await model.complete(request)
        await model.complete(request)
    one, two = server.requests
    assert declared(one) == [t.name for t in CATALOG[:512]]
    assert one.body["tools"] == two.body["tools"]
    (warning,) = [r.getMessage() for r in caplog.records]  # once, not per request
    assert warning.startswith("88 of 600 tools left out of the request to gemini:gemini-test: Gemini takes at most 512")


async def test_512_tools_are_sent_whole(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=gemini_response([{"text": "ok"}])))
    await make_gemini().complete(ModelRequest(system=(), tools=tuple(CATALOG[:512]), messages=(Message("user", "hi"),)))
    assert len(declared(server.requests[0])) == 512


async def run(server: FakeLLMServer, make_gemini: Callable[..., Any], make_runtime: Any, **deferred: Any) -> Any:
    server.responder = answer
    plugins: list[Any] = [GeminiProvider()]
    if deferred:
        plugins.append(DeferredToolsPlugin(DeferredConfig(enabled=True, **deferred)))
    tools = [*(CatalogTool(d, "test") for d in CATALOG), add]
    runtime = make_runtime(model=make_gemini(), tools=tools, plugins=plugins)
    priors = runtime.profile_of(runtime.agent.id)[ToolPriors]
    priors.p.update({"add": 0.9, "t599": 0.5, "t598": 0.4})  # learned: used far more than the rest
    seen: list[ev.Event] = []
    runtime.events.subscribe(seen.append)
    outcome = await runtime.session().run("2 + 3?")
    assert (outcome.stop_reason, outcome.text) == ("final", "5")
    return [e for e in seen if isinstance(e, PluginWarning)]


async def test_a_run_keeps_the_tools_with_the_highest_learned_priority(
    server: FakeLLMServer, make_gemini: Callable[..., Any], make_runtime: Any
) -> None:
    warnings = await run(server, make_gemini, make_runtime)
    one, two = server.requests
    assert one.raw.split(b'"tools"')[1] == two.raw.split(b'"tools"')[1]  # the same bytes on every step
    names = declared(one)
    assert len(names) == 512
    # the learned ones, then the first of the rest in request order, in request order
    assert names == [*(f"t{i:03}" for i in range(509)), "t598", "t599", "add"]
    (warning,) = warnings
    assert warning.plugin == "gemini"
    assert warning.message.startswith("89 of 601 tools left out of the request to gemini:gemini-test")
    assert warning.message.endswith("kept the 512 with the highest learned priority")


async def test_a_deferring_plugins_own_tools_stay(
    server: FakeLLMServer, make_gemini: Callable[..., Any], make_runtime: Any
) -> None:
    # every tool placed eager: the plugin's search and dispatch tools come on top of 601
    warnings = await run(server, make_gemini, make_runtime, default_mode="eager")
    names = declared(server.requests[0])
    assert len(names) == 512
    assert {"ToolSearch", "deferred_tool_call", "add", "t599", "t598"} <= set(names)
    assert len(warnings) == 1 and warnings[0].message.startswith("91 of 603 tools left out")
