"""A real Runtime driving the gemini provider against the fake server: a multi-step run
whose tools array and system instruction are the same bytes on every request and whose
history only grows at its end, a malformed call answered with an error result, a
streamed run whose thought signatures are sent back on the next step and after the
session is saved and resumed, the same responses streamed or whole, an image a tool
returned, cancellation, and a model reused across event loops."""

from __future__ import annotations

import base64
import itertools
import json
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from support.fake_llm_server import (
    GEMINI_KEY_ENV,
    SSE,
    FakeLLMServer,
    Recorded,
    Reply,
    array_items_raw,
    gemini_call,
    gemini_response,
    top_level_raw,
)

from greenroom import AgentConfig, MediaPart, Message, ModelRequest, Runtime, TextDelta, ToolCall, ToolResult, tool
from greenroom.compose.build import build_model
from greenroom.plugins.discovery import make_plugin_host
from greenroom_gemini import GeminiProvider

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: What to shout.
    """
    return text.upper()


def steps(rec: Recorded) -> int:
    return sum(1 for c in rec.body["contents"] if c["role"] == "model")


def make_runtime(server: FakeLLMServer, tools: list[Any], **options: Any) -> tuple[Runtime, Any]:
    host = make_plugin_host(records=[], extra=[GeminiProvider()])
    model = build_model(
        "gemini:gemini-3-flash", {"base_url": server.url, "api_key_env": GEMINI_KEY_ENV, **options}, host
    )
    agent = AgentConfig(system_prompt="You are a calculator that shouts.", max_steps=6)
    return Runtime(model=model, tools=tools, host=host, agent=agent), model


# Step 2's arguments are not an object: the run answers with an error result, and the
# model corrects itself.
SCRIPT: list[dict[str, Any] | str] = [
    gemini_call("add", {"a": 2, "b": 3}),
    gemini_call("add", [2, 3]),
    gemini_call("shout", {"text": "five"}),
    "The answer is FIVE.",
]


def scripted(rec: Recorded) -> Reply:
    step = steps(rec)
    turn = SCRIPT[step]
    usage = {"prompt_tokens": 2000 + step, "cached_tokens": 1024 * step}
    parts = [{"text": turn}] if isinstance(turn, str) else [turn]
    return Reply(body=gemini_response(parts, **usage))


async def test_multi_step_run_keeps_the_prefix_byte_identical(server: FakeLLMServer) -> None:
    server.responder = scripted
    runtime, model = make_runtime(server, [add, shout])
    try:
        outcome = await runtime.session().run("What is 2 + 3, shouted?")
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text, outcome.steps) == ("final", "The answer is FIVE.", 4)
    tops = [top_level_raw(r.raw) for r in server.requests]
    prefixes = [(t["systemInstruction"], t["tools"]) for t in tops]
    assert all(p == prefixes[0] for p in prefixes), "the cacheable prefix changed between steps"
    assert json.loads(prefixes[0][0]) == {"parts": [{"text": "You are a calculator that shouts."}]}
    assert [d["name"] for d in json.loads(prefixes[0][1])[0]["functionDeclarations"]] == ["add", "shout"]
    histories = [array_items_raw(t["contents"]) for t in tops]
    for before, after in itertools.pairwise(histories):
        assert after[: len(before)] == before  # byte for byte
    final = server.requests[-1].body["contents"]
    results = [p["functionResponse"]["response"] for c in final for p in c["parts"] if "functionResponse" in p]
    assert results[0] == {"output": "5"} and results[2] == {"output": "FIVE"}
    assert "not a JSON object" in results[1]["error"] and "[2, 3]" in results[1]["error"]
    assert final[3]["parts"] == [{"functionCall": {"id": "call_2_0", "name": "add", "args": {}}}]
    assert outcome.usage.cached_input_tokens == 1024 * (0 + 1 + 2 + 3)
    assert outcome.usage.input_tokens == 4 * 2000 + 6


TOOL_TURN: list[dict[str, Any]] = [
    {"text": "Adding.", "thoughtSignature": "Q2lnLTE="},
    gemini_call("add", {"a": 2, "b": 3}, call_id="fc_1", signature="Q2lnLTI="),
]
FINAL_TURN: list[dict[str, Any]] = [{"text": "2 + 3 = 5.", "thoughtSignature": "Q2lnLTM="}]


def signed(streamed: bool) -> Any:
    def answer(rec: Recorded) -> Reply:
        done = any(c["role"] == "model" for c in rec.body["contents"][-2:])
        parts = FINAL_TURN if done else TOOL_TURN
        if not streamed:
            return Reply(body=gemini_response(parts))
        events = []
        for part in parts:  # each text in two pieces, the signature on the second
            if "text" in part:
                text = part["text"]
                events += [SSE(gemini_response([{"text": text[:3]}], finish_reason=None))]
                events += [SSE(gemini_response([{**part, "text": text[3:]}], finish_reason=None))]
            else:
                events.append(SSE(gemini_response([part], finish_reason=None)))
        events.append(SSE(gemini_response([], cached_tokens=512)))
        return Reply(stream=events)

    return answer


async def test_a_streamed_run_sends_its_thought_signatures_back(server: FakeLLMServer, tmp_path: Path) -> None:
    server.responder = signed(streamed=True)
    runtime, model = make_runtime(server, [add])
    heard: list[str] = []
    session = runtime.session()
    try:
        outcome = await session.run("add 2 and 3", on_text=lambda d: heard.append(d.text))
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text) == ("final", "2 + 3 = 5.")
    assert heard == ["Add", "ing.", "2 +", " 3 = 5."]
    assert all(r.path.endswith(":streamGenerateContent?alt=sse") for r in server.requests)
    second = server.requests[1].body["contents"]
    assert second[1] == {"role": "model", "parts": TOOL_TURN}
    assert second[2]["parts"] == [{"functionResponse": {"id": "fc_1", "name": "add", "response": {"output": "5"}}}]
    assert outcome.usage.cached_input_tokens == 1024

    # saved and resumed (and answered whole this time): every signed turn goes back as it came
    server.responder = signed(streamed=False)
    path = session.save(tmp_path / "s.json")
    runtime2, model2 = make_runtime(server, [add])
    resumed = runtime2.load_session(path)
    try:
        await resumed.run("and 3 + 2?")
    finally:
        await model2.aclose()
    third = server.requests[2].body["contents"]
    assert third[1] == {"role": "model", "parts": TOOL_TURN}
    assert third[3] == {"role": "model", "parts": FINAL_TURN}


async def test_streamed_and_whole_responses_are_the_same(server: FakeLLMServer) -> None:
    _, model = make_runtime(server, [add])
    request = ModelRequest(system=(), tools=(add.descriptor,), messages=(Message("user", "add 2 and 3"),), step=1)
    try:
        server.responder = signed(streamed=False)
        whole = await model.complete(request)
        server.responder = signed(streamed=True)
        items = [item async for item in model.stream(request)]
    finally:
        await model.aclose()
    streamed = items[-1]
    assert [i for i in items[:-1] if isinstance(i, TextDelta)] == [TextDelta("Add"), TextDelta("ing.")]
    assert streamed.message == whole.message  # type: ignore[union-attr]
    assert streamed.stop_reason == whole.stop_reason == "STOP"  # type: ignore[union-attr]
    assert whole.tool_calls == (ToolCall("fc_1", "add", {"a": 2, "b": 3}),)


PNG = MediaPart("image", "image/png", base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode())


@tool
def screenshot() -> ToolResult:
    """Take a screenshot."""
    return ToolResult("Screenshot taken.", parts=(PNG,))


async def test_an_image_a_tool_returned_reaches_the_model(server: FakeLLMServer) -> None:
    def answer(rec: Recorded) -> Reply:
        if steps(rec) == 0:
            return Reply(body=gemini_response([gemini_call("screenshot", {}, call_id="fc_1")]))
        return Reply(body=gemini_response([{"text": "A login page."}]))

    server.responder = answer
    runtime, model = make_runtime(server, [screenshot])
    try:
        outcome = await runtime.session().run("what is on screen?")
    finally:
        await model.aclose()
    assert outcome.text == "A login page."
    response = server.requests[1].body["contents"][2]["parts"][0]["functionResponse"]
    assert response["response"]["output"].startswith("Screenshot taken.")
    assert response["parts"] == [{"inlineData": {"mimeType": "image/png", "data": PNG.data}}]


async def test_cancelling_a_run_closes_the_http_call_and_the_model_stays_usable(server: FakeLLMServer) -> None:
    server.push(Reply(hang=True), Reply(body=gemini_response([{"text": "still here"}])))
    runtime, model = make_runtime(server, [add])
    session = runtime.session()
    try:
        with anyio.move_on_after(0.3) as scope:
            await session.run("this will be cancelled")
        assert scope.cancelled_caught
        assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))
        outcome = await session.run("and now?")
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text) == ("final", "still here")


async def test_a_model_survives_a_new_event_loop(server: FakeLLMServer) -> None:
    server.responder = lambda rec: Reply(body=gemini_response([{"text": "hi"}]))
    runtime, model = make_runtime(server, [add])

    def run_in_a_fresh_loop() -> str:
        async def go() -> str:
            return (await runtime.session().run("hello")).text

        return anyio.run(go)

    texts = [await anyio.to_thread.run_sync(run_in_a_fresh_loop) for _ in range(2)]
    assert texts == ["hi", "hi"]
    await model.aclose()
