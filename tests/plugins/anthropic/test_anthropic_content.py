"""What the anthropic provider sends and keeps beyond plain text: images in tool results
(and placeholders where the model or the API takes none), extended thinking (its
blocks and signatures kept and sent back unchanged, never shown), text with lone
surrogates, and malformed content from the API."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from support.fake_llm_server import ANTHROPIC_KEY_ENV, SSE, FakeLLMServer, Reply, SleepRecorder, anthropic_message

from greenroom.config import ConfigError
from greenroom.models import Message, ModelRequest, SystemSection, ToolCall
from greenroom.tools import MediaPart, ToolDescriptor
from greenroom_anthropic import make_anthropic_model

pytestmark = pytest.mark.anyio

EPHEMERAL = {"type": "ephemeral"}
SHOT = ToolDescriptor("screenshot", "Take a screenshot.")
PNG = MediaPart("image", "image/png", base64.b64encode(b"\x89PNG fake").decode())
SVG = MediaPart("image", "image/svg+xml", base64.b64encode(b"<svg/>").decode())
WAV = MediaPart("audio", "audio/wav", base64.b64encode(b"RIFF fake").decode())
OK = anthropic_message([{"type": "text", "text": "ok"}])
OK_STREAM = [
    SSE({"type": kind, **data}, event=kind)
    for kind, data in (
        ("message_start", {"message": {**OK, "content": [], "stop_reason": None}}),
        ("content_block_start", {"index": 0, "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"index": 0, "delta": {"type": "text_delta", "text": "ok"}}),
        ("content_block_stop", {"index": 0}),
        ("message_delta", {"delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 1}}),
        ("message_stop", {}),
    )
]


@pytest.fixture
def make(make_anthropic: Callable[..., Any]) -> Callable[..., Any]:
    return make_anthropic


def with_result(result: Message) -> ModelRequest:
    return ModelRequest(
        system=(SystemSection("agent", "You see."),),
        tools=(SHOT,),
        messages=(
            Message("user", "what is on screen?"),
            Message("assistant", "", tool_calls=(ToolCall("toolu_1", "screenshot", {}),)),
            result,
        ),
        step=2,
    )


SHOT_RESULT = Message(
    "tool",
    f"Here it is. {PNG.placeholder()} {SVG.placeholder()} {WAV.placeholder()}",
    tool_call_id="toolu_1",
    name="screenshot",
    parts=(PNG, SVG, WAV),
)


# ----------------------------------------------------------------------------- images


async def test_images_go_in_the_tool_result_beside_its_text(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    await make().complete(with_result(SHOT_RESULT))
    block = server.requests[0].body["messages"][2]["content"][0]
    assert block == {
        "type": "tool_result",
        "tool_use_id": "toolu_1",
        "content": [
            # the text still names every part; the API takes PNG but neither SVG nor sound
            {"type": "text", "text": SHOT_RESULT.content},
            {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG.data}},
        ],
        "is_error": False,
        "cache_control": EPHEMERAL,
    }


@pytest.mark.parametrize(("model", "options"), [("claude-test", {"images": False}), ("claude-2.1", {})])
async def test_models_without_images_read_the_placeholders(
    server: FakeLLMServer, make_anthropic: Callable[..., Any], model: str, options: dict[str, Any]
) -> None:
    server.push(Reply(body=OK))
    built = make_anthropic(**options)
    built.model = model
    built.settings = attrs.evolve(built.settings, images=options.get("images", not model.startswith("claude-2")))
    assert built.images is False
    hand_made = attrs.evolve(SHOT_RESULT, content="Here it is.")  # names no part: they are added
    await built.complete(with_result(hand_made))
    content = server.requests[0].body["messages"][2]["content"][0]["content"]
    assert content == f"Here it is.\n{PNG.placeholder()}\n{SVG.placeholder()}\n{WAV.placeholder()}"


def test_images_option() -> None:
    opts = {"api_key_env": ANTHROPIC_KEY_ENV}
    assert make_anthropic_model("claude-sonnet-4-5", opts).images is True  # type: ignore[attr-defined]
    assert make_anthropic_model("claude-instant-1.2", opts).images is False  # type: ignore[attr-defined]
    assert make_anthropic_model("claude-2.1", {**opts, "images": True}).images is True  # type: ignore[attr-defined]
    with pytest.raises(ConfigError) as info:
        make_anthropic_model("claude-test", {**opts, "images": "yes"})
    assert info.value.path == "model.images"


# ----------------------------------------------------------------------------- thinking

THINKING_TURN: list[dict[str, Any]] = [
    {"type": "thinking", "thinking": "Screenshot first.", "signature": "EqQBCkgIARABGAIiQ"},
    {"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix"},
    {"type": "tool_use", "id": "toolu_7", "name": "screenshot", "input": {}},
]


async def test_thinking_blocks_are_kept_and_sent_back_unchanged(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(Reply(body=anthropic_message(THINKING_TURN)), Reply(body=OK))
    model = make(thinking={"budget_tokens": 2048}, max_tokens=8192)
    first = ModelRequest(system=(), tools=(SHOT,), messages=(Message("user", "look"),))
    response = await model.complete(first)
    msg = response.message
    assert (msg.content, msg.tool_calls) == ("", (ToolCall("toolu_7", "screenshot", {}),))  # thinking is not text
    assert msg.provider_content is not None and list(msg.provider_content.blocks) == THINKING_TURN
    follow = attrs.evolve(
        first, messages=(*first.messages, msg, Message("tool", "a login page", tool_call_id="toolu_7")), step=2
    )
    await model.complete(follow)
    one, two = (r.body for r in server.requests)
    assert one["thinking"] == two["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert one["max_tokens"] == 8192
    assert two["messages"][1] == {"role": "assistant", "content": THINKING_TURN}  # signatures and all
    assert two["messages"][0]["content"][0]["cache_control"] == EPHEMERAL  # never on a thinking block


@pytest.mark.parametrize(
    ("value", "wire"),
    [
        ({"budget_tokens": 1024}, {"type": "enabled", "budget_tokens": 1024}),
        ("adaptive", {"type": "adaptive"}),
        ({"type": "adaptive", "display": "omitted"}, {"type": "adaptive", "display": "omitted"}),
    ],
)
def test_thinking_options(value: Any, wire: dict[str, Any]) -> None:
    model = make_anthropic_model("claude-test", {"api_key_env": ANTHROPIC_KEY_ENV, "thinking": value})
    assert model.settings.thinking == wire  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"thinking": True}, "model.thinking"),
        ({"thinking": {"budget_tokens": 512}}, "model.thinking.budget_tokens"),
        ({"thinking": {"budget_tokens": 4096}}, "model.thinking.budget_tokens"),  # not below max_tokens (4096)
        ({"thinking": {"budget_tokens": 2048, "effort": "high"}}, "model.thinking.effort"),
        ({"thinking": {"type": "sometimes"}}, "model.thinking.type"),
        ({"thinking": {"type": "adaptive", "budget_tokens": 2048}}, "model.thinking.budget_tokens"),
        ({"thinking": {"type": "adaptive", "display": "full"}}, "model.thinking.display"),
        ({"thinking": "adaptive", "temperature": 0.2}, "model.temperature"),
    ],
)
def test_bad_thinking_options_name_the_key(options: dict[str, Any], path: str) -> None:
    with pytest.raises(ConfigError) as info:
        make_anthropic_model("claude-test", {"api_key_env": ANTHROPIC_KEY_ENV, **options})
    assert info.value.path == path


# ----------------------------------------------------------------------------- any text

LONE = "\ud800"


async def test_lone_surrogates_never_fail_a_request(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=OK), Reply(stream=OK_STREAM))
    odd = ToolDescriptor(f"read{''}", f"Read a file {LONE}.", {"type": "object", "properties": {f"p{LONE}": {}}})
    request = ModelRequest(
        system=(SystemSection("agent", f"Files: report{LONE}.txt"),),
        tools=(odd,),
        messages=(
            Message("user", f"open report{LONE}.txt \ud83d\ude00"),
            Message("assistant", "", tool_calls=(ToolCall("toolu_1", "read", {"path": f"report{LONE}.txt"}),)),
            Message("tool", f"no such file: report{LONE}.txt", tool_call_id="toolu_1", name="read"),
        ),
        step=2,
    )
    model = make()
    response = await model.complete(request)
    assert response.message.content == "ok"
    body = server.requests[0].body
    assert body["system"][0]["text"] == "Files: report\ufffd.txt"
    assert body["tools"][0]["description"] == "Read a file \ufffd."
    assert list(body["tools"][0]["input_schema"]["properties"]) == ["p\ufffd"]
    # a split pair is joined into its character, a lone half replaced
    assert body["messages"][0]["content"][0]["text"] == "open report\ufffd.txt \U0001f600"
    assert body["messages"][1]["content"][0]["input"] == {"path": "report\ufffd.txt"}
    assert body["messages"][2]["content"][0]["content"] == "no such file: report\ufffd.txt"
    # what it was built from is untouched
    assert odd.description.endswith(f"{LONE}.") and f"p{LONE}" in odd.parameters["properties"]
    # streamed the same way
    texts = [item async for item in model.stream(request)]
    assert texts[-1].message.content == "ok"  # type: ignore[union-attr]
    assert server.requests[1].body["system"] == body["system"]


# ----------------------------------------------------------------------------- malformed content


async def test_malformed_tool_use_blocks(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    nameless = anthropic_message([{"type": "tool_use", "id": "toolu_1", "input": {}}])
    odd = anthropic_message(
        [
            {"type": "tool_use", "name": "screenshot", "input": {}},  # no id
            {"type": "tool_use", "id": "toolu_3", "name": "screenshot", "input": [1, 2]},  # not an object
        ]
    )
    server.push(Reply(body=nameless), Reply(body=odd), Reply(body=OK))
    model = make()
    request = ModelRequest(system=(), tools=(SHOT,), messages=(Message("user", "look"),), step=1)
    response = await model.complete(request)
    # a call without a name can be neither run nor sent back: asked again
    assert len(server.requests) == 2 and len(sleeps.waits) == 1
    first, second = response.tool_calls
    assert first == ToolCall("toolu_1_0", "screenshot", {})
    assert (second.id, second.arguments, second.raw_arguments) == ("toolu_3", None, "[1, 2]")
    # replayed with an object, beside the error result the run gives it
    follow = attrs.evolve(
        request,
        messages=(
            *request.messages,
            response.message,
            Message("tool", "ok", tool_call_id="toolu_1_0"),
            Message("tool", "not an object", tool_call_id="toolu_3", is_error=True),
        ),
    )
    await model.complete(follow)
    sent = server.requests[2].body["messages"][1]["content"]
    assert [(b["id"], b["input"]) for b in sent] == [("toolu_1_0", {}), ("toolu_3", {})]


async def test_a_nameless_call_every_time_ends_in_a_named_error(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    from greenroom.providers import ProviderResponseError

    server.responder = lambda rec: Reply(body=anthropic_message([{"type": "tool_use", "id": "t", "input": {}}]))
    with pytest.raises(ProviderResponseError, match="tool_use block has no name") as info:
        await make(max_retries=1).complete(ModelRequest(system=(), tools=(SHOT,), messages=(Message("user", "x"),)))
    assert info.value.attempts == 2
