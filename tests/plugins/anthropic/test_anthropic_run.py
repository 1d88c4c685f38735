"""A real Runtime driving the anthropic provider's stream against the fake server: a run
with extended thinking and a tool call, its text heard as it arrives (never the
thinking), the thinking turn sent back unchanged on the next step and after a saved
session is resumed, the same responses whether streamed or not; and an image a tool
returned sent to the model as an image block."""

from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm_server import ANTHROPIC_KEY_ENV, SSE, FakeLLMServer, Recorded, Reply, anthropic_message

from greenroom.compose.build import build_model
from greenroom.config import AgentConfig
from greenroom.models import Message, ModelRequest, TextDelta, ToolCall
from greenroom.plugins.discovery import make_plugin_host
from greenroom.run.runtime import Runtime
from greenroom.tools import MediaPart, ToolResult, tool
from greenroom_anthropic import AnthropicProvider

pytestmark = pytest.mark.anyio


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


THINKING = {"type": "thinking", "thinking": "Use the add tool.", "signature": "EqQBCkgIARAB"}
TOOL_TURN: list[dict[str, Any]] = [
    THINKING,
    {"type": "text", "text": "Adding."},
    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
]
FINAL_TURN: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "It is 5.", "signature": "EqQBCkgIARAC"},
    {"type": "text", "text": "2 + 3 = 5."},
]


def events_of(content: list[dict[str, Any]], stop_reason: str) -> list[SSE]:
    """The events the API streams for a message with this content, each block's text,
    thinking or input in two pieces."""

    def ev(kind: str, **data: Any) -> SSE:
        return SSE({"type": kind, **data}, event=kind)

    start = anthropic_message([], input_tokens=30, cache_read=900)
    out = [ev("message_start", message={**start, "stop_reason": None})]
    for i, block in enumerate(content):
        kind = block["type"]
        if kind == "text":
            text = block["text"]
            deltas = [{"type": "text_delta", "text": p} for p in (text[:3], text[3:])]
            first = {"type": "text", "text": ""}
        elif kind == "thinking":
            words = block["thinking"]
            deltas = [{"type": "thinking_delta", "thinking": p} for p in (words[:4], words[4:])]
            deltas.append({"type": "signature_delta", "signature": block["signature"]})
            first = {"type": "thinking", "thinking": "", "signature": ""}
        else:
            raw = '{"a": 2, "b": 3}'
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in (raw[:6], raw[6:])]
            first = {**block, "input": {}}
        out.append(ev("content_block_start", index=i, content_block=first))
        out.extend(ev("content_block_delta", index=i, delta=d) for d in deltas)
        out.append(ev("content_block_stop", index=i))
    out.append(ev("message_delta", delta={"stop_reason": stop_reason}, usage={"output_tokens": 12}))
    out.append(ev("message_stop"))
    return out


def responder(streamed: bool) -> Any:
    def answer(rec: Recorded) -> Reply:
        done = any(m["role"] == "assistant" for m in rec.body["messages"][-2:])
        content, stop = (FINAL_TURN, "end_turn") if done else (TOOL_TURN, "tool_use")
        if streamed:
            return Reply(stream=events_of(content, stop))
        return Reply(body=anthropic_message(content, stop_reason=stop))

    return answer


def make_runtime(server: FakeLLMServer) -> tuple[Runtime, Any]:
    host = make_plugin_host(records=[], extra=[AnthropicProvider()])
    options = {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV, "thinking": {"budget_tokens": 2048}}
    model = build_model("anthropic:claude-test", options, host)
    runtime = Runtime(model=model, tools=[add], host=host, agent=AgentConfig(system_prompt="Be brief.", max_steps=4))
    return runtime, model


async def test_a_streamed_run_with_thinking_and_a_tool_call(server: FakeLLMServer, tmp_path: Path) -> None:
    server.responder = responder(streamed=True)
    runtime, model = make_runtime(server)
    heard: list[str] = []
    session = runtime.session()
    try:
        outcome = await session.run("add 2 and 3", on_text=lambda d: heard.append(d.text))
    finally:
        await model.aclose()
    assert (outcome.stop_reason, outcome.text) == ("final", "2 + 3 = 5.")
    assert heard == ["Add", "ing.", "2 +", " 3 = 5."]  # as it came, thinking never among it
    first, second = (r.body for r in server.requests)
    assert first["stream"] is True and first["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert second["messages"][1] == {"role": "assistant", "content": TOOL_TURN}
    result = second["messages"][2]["content"][0]
    assert (result["tool_use_id"], result["content"]) == ("toolu_1", "5")
    assert session.messages[1].content == "Adding."  # the text, not the thinking

    # saved and resumed (and answered whole this time): the thinking turns are sent
    # back exactly as they came
    server.responder = responder(streamed=False)
    path = session.save(tmp_path / "s.json")
    runtime2, model2 = make_runtime(server)
    resumed = runtime2.load_session(path)
    try:
        await resumed.run("and 3 + 2?")
    finally:
        await model2.aclose()
    third = server.requests[2].body["messages"]
    assert third[1] == {"role": "assistant", "content": TOOL_TURN}
    assert third[3] == {"role": "assistant", "content": FINAL_TURN}


async def test_streamed_and_whole_responses_are_the_same(server: FakeLLMServer) -> None:
    _, model = make_runtime(server)
    request = ModelRequest(system=(), tools=(add.descriptor,), messages=(Message("user", "add 2 and 3"),), step=1)
    try:
        server.responder = responder(streamed=False)
        whole = await model.complete(request)
        server.responder = responder(streamed=True)
        items = [item async for item in model.stream(request)]
    finally:
        await model.aclose()
    streamed = items[-1]
    assert [i for i in items[:-1] if isinstance(i, TextDelta)] == [TextDelta("Add"), TextDelta("ing.")]
    assert streamed.message == whole.message  # type: ignore[union-attr]
    assert streamed.stop_reason == whole.stop_reason == "tool_use"  # type: ignore[union-attr]
    assert whole.tool_calls == (ToolCall("toolu_1", "add", {"a": 2, "b": 3}),)


PNG = MediaPart("image", "image/png", base64.b64encode(b"\x89PNG\r\n\x1a\n fake").decode())


@tool
def screenshot() -> ToolResult:
    """Take a screenshot."""
    return ToolResult("Screenshot taken.", parts=(PNG,))


async def test_an_image_a_tool_returned_reaches_the_model(server: FakeLLMServer) -> None:
    def answer(rec: Recorded) -> Reply:
        if len(rec.body["messages"]) == 1:
            call = {"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}
            return Reply(body=anthropic_message([call]))
        return Reply(body=anthropic_message([{"type": "text", "text": "A login page."}]))

    server.responder = answer
    host = make_plugin_host(records=[], extra=[AnthropicProvider()])
    model = build_model("anthropic:claude-test", {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV}, host)
    runtime = Runtime(model=model, tools=[screenshot], host=host, agent=AgentConfig(max_steps=3))
    try:
        outcome = await runtime.session().run("what is on screen?")
    finally:
        await model.aclose()
    assert outcome.text == "A login page."
    result = server.requests[1].body["messages"][2]["content"][0]
    text, image = result["content"]
    assert text["type"] == "text" and text["text"].startswith("Screenshot taken.")
    assert image == {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG.data}}
