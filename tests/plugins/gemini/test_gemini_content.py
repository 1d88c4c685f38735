"""What the gemini provider sends and keeps beyond plain text: images in function
responses (and placeholders where the model or the API takes none), thought signatures
kept on their parts and sent back unchanged, text with lone surrogates, and answers the
API could not read or would not give."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

import attrs
import pytest
from support.fake_llm_server import SSE, FakeLLMServer, Reply, SleepRecorder, gemini_call, gemini_response

from greenroom import (
    MediaPart,
    Message,
    ModelRequest,
    ProviderResponseError,
    ProviderToolCallError,
    SystemSection,
    ToolCall,
    ToolDescriptor,
)
from greenroom_gemini import make_gemini_model

pytestmark = pytest.mark.anyio

SHOT = ToolDescriptor("screenshot", "Take a screenshot.")
PNG = MediaPart("image", "image/png", base64.b64encode(b"\x89PNG fake").decode())
SVG = MediaPart("image", "image/svg+xml", base64.b64encode(b"<svg/>").decode())
WAV = MediaPart("audio", "audio/wav", base64.b64encode(b"RIFF fake").decode())
OK = gemini_response([{"text": "ok"}])
SHOT_RESULT = Message(
    "tool",
    f"Here it is. {PNG.placeholder()} {SVG.placeholder()} {WAV.placeholder()}",
    tool_call_id="c1",
    name="screenshot",
    parts=(PNG, SVG, WAV),
)


def with_result(result: Message) -> ModelRequest:
    return ModelRequest(
        system=(SystemSection("agent", "You see."),),
        tools=(SHOT,),
        messages=(
            Message("user", "what is on screen?"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "screenshot", {}),)),
            result,
        ),
        step=2,
    )


# ----------------------------------------------------------------------------- images


async def test_images_go_in_the_function_response(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=OK))
    model = make_gemini("gemini-3-pro-preview")
    assert model.images is True
    await model.complete(with_result(SHOT_RESULT))
    part = server.requests[0].body["contents"][2]["parts"][0]
    assert part == {
        "functionResponse": {
            "id": "c1",
            "name": "screenshot",
            # the text still names every part; a function response takes PNG, not SVG or sound
            "response": {"output": SHOT_RESULT.content},
            "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG.data}}],
        }
    }


@pytest.mark.parametrize(("name", "options"), [("gemini-3-flash", {"images": False}), ("gemini-2.5-flash", {})])
async def test_models_without_images_read_the_placeholders(
    server: FakeLLMServer, make_gemini: Callable[..., Any], name: str, options: dict[str, Any]
) -> None:
    server.push(Reply(body=OK))
    model = make_gemini(name, **options)
    assert model.images is False
    hand_made = attrs.evolve(SHOT_RESULT, content="Here it is.")  # names no part: they are added
    await model.complete(with_result(hand_made))
    response = server.requests[0].body["contents"][2]["parts"][0]["functionResponse"]
    assert "parts" not in response
    assert response["response"] == {
        "output": f"Here it is.\n{PNG.placeholder()}\n{SVG.placeholder()}\n{WAV.placeholder()}"
    }


def test_images_option() -> None:
    def images(name: str, **options: Any) -> bool:
        return bool(make_gemini_model(name, options).images)  # type: ignore[attr-defined]

    assert images("gemini-3-pro-preview") and images("models/gemini-3.1-flash")
    assert not images("gemini-2.5-pro") and not images("tunedModels/my-model-123")
    assert images("gemini-2.5-pro", images=True)


# ----------------------------------------------------------------------------- thought signatures

SIGNED_TURN: list[dict[str, Any]] = [
    {"text": "I should look first.", "thought": True},
    {"text": "Looking.", "thoughtSignature": "Q2lnZ0FWU29YTzJVMA=="},
    gemini_call("screenshot", {}, call_id="fc_7", signature="Q2lvQkFWU29YTzF4dA=="),
    gemini_call("screenshot", {"region": "top"}, call_id="fc_8"),
]


async def test_signatures_are_kept_on_their_parts_and_sent_back(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(body=gemini_response(SIGNED_TURN, thoughts_tokens=30)), Reply(body=OK))
    model = make_gemini("gemini-3-pro-preview")
    first = ModelRequest(system=(), tools=(SHOT,), messages=(Message("user", "look"),), step=1)
    response = await model.complete(first)
    msg = response.message
    assert msg.content == "Looking."  # the thought is not the text
    assert msg.tool_calls == (ToolCall("fc_7", "screenshot", {}), ToolCall("fc_8", "screenshot", {"region": "top"}))
    assert msg.provider_content is not None and list(msg.provider_content.blocks) == SIGNED_TURN
    follow = attrs.evolve(
        first,
        messages=(
            *first.messages,
            msg,
            Message("tool", "a login page", tool_call_id="fc_7", name="screenshot"),
            Message("tool", "a logo", tool_call_id="fc_8", name="screenshot"),
        ),
        step=2,
    )
    await model.complete(follow)
    turns = server.requests[1].body["contents"]
    assert turns[1] == {"role": "model", "parts": SIGNED_TURN}  # every part as it came, signatures and all
    assert [p["functionResponse"]["id"] for p in turns[2]["parts"]] == ["fc_7", "fc_8"]


async def test_a_turn_from_another_provider_is_rebuilt(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    from greenroom import ProviderContent

    server.push(Reply(body=OK))
    theirs = Message(
        "assistant",
        "Looking.",
        tool_calls=(ToolCall("toolu_1", "screenshot", {}),),
        provider_content=ProviderContent("anthropic", ({"type": "thinking", "thinking": "x", "signature": "s"},)),
    )
    request = ModelRequest(
        system=(),
        tools=(SHOT,),
        messages=(Message("user", "look"), theirs, Message("tool", "a page", tool_call_id="toolu_1")),
    )
    await make_gemini().complete(request)
    assert server.requests[0].body["contents"][1]["parts"] == [
        {"text": "Looking."},
        {"functionCall": {"id": "toolu_1", "name": "screenshot", "args": {}}},
    ]


# ----------------------------------------------------------------------------- any text

LONE = "\ud800"


async def test_lone_surrogates_never_fail_a_request(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body=OK), Reply(stream=[SSE(OK)]))
    odd = ToolDescriptor("read", f"Read a file {LONE}.", {"type": "object", "properties": {f"p{LONE}": {}}})
    request = ModelRequest(
        system=(SystemSection("agent", f"Files: report{LONE}.txt"),),
        tools=(odd,),
        messages=(
            Message("user", f"open report{LONE}.txt \ud83d\ude00"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "read", {"path": f"report{LONE}.txt"}),)),
            Message("tool", f"no such file: report{LONE}.txt", tool_call_id="c1", name="read"),
        ),
        step=2,
    )
    model = make_gemini()
    assert (await model.complete(request)).message.content == "ok"
    body = server.requests[0].body
    assert body["systemInstruction"] == {"parts": [{"text": "Files: report\ufffd.txt"}]}
    declared = body["tools"][0]["functionDeclarations"][0]
    assert declared["description"] == "Read a file \ufffd." and list(
        declared["parametersJsonSchema"]["properties"]
    ) == ["p\ufffd"]
    # a split pair is joined into its character, a lone half replaced
    assert body["contents"][0]["parts"][0]["text"] == "open report\ufffd.txt \U0001f600"
    assert body["contents"][1]["parts"][0]["functionCall"]["args"] == {"path": "report\ufffd.txt"}
    assert body["contents"][2]["parts"][0]["functionResponse"]["response"] == {
        "output": "no such file: report\ufffd.txt"
    }
    assert "\\ud800" not in server.requests[0].raw.decode()
    assert odd.description.endswith(f"{LONE}.")  # what it was built from is untouched
    items = [item async for item in model.stream(request)]
    assert items[-1].message.content == "ok"  # type: ignore[union-attr]
    assert server.requests[1].body == body


# ----------------------------------------------------------------------------- answers it cannot use


async def test_a_call_the_api_could_not_read_is_asked_again(
    server: FakeLLMServer, sleeps: SleepRecorder, make_gemini: Callable[..., Any]
) -> None:
    malformed = gemini_response([], finish_reason="MALFORMED_FUNCTION_CALL")
    nameless = gemini_response([{"functionCall": {"args": {}}}])
    odd = gemini_response([gemini_call("screenshot", [1, 2])])  # arguments that are not an object
    server.push(Reply(body=malformed), Reply(body=nameless), Reply(body=odd))
    request = ModelRequest(system=(), tools=(SHOT,), messages=(Message("user", "look"),), step=1)
    response = await make_gemini(max_retries=2).complete(request)
    assert len(server.requests) == 3 and len(sleeps.waits) == 2
    (call,) = response.tool_calls
    assert (call.id, call.arguments, call.raw_arguments) == ("call_1_0", None, "[1, 2]")  # an error result quotes it

    server.responder = lambda rec: Reply(body=malformed)
    with pytest.raises(ProviderToolCallError, match="MALFORMED_FUNCTION_CALL") as info:
        await make_gemini(max_retries=1).complete(request)
    assert info.value.attempts == 2


async def test_a_blocked_prompt_is_named(server: FakeLLMServer, make_gemini: Callable[..., Any]) -> None:
    server.push(Reply(body={"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": {"promptTokenCount": 9}}))
    with pytest.raises(ProviderResponseError, match=r"the prompt was blocked \(SAFETY\)"):
        await make_gemini(max_retries=0).complete(ModelRequest(system=(), tools=(), messages=(Message("user", "x"),)))


async def test_a_candidate_stopped_for_safety_ends_the_turn(
    server: FakeLLMServer, make_gemini: Callable[..., Any]
) -> None:
    server.push(Reply(body={"candidates": [{"finishReason": "SAFETY", "index": 0}]}))
    response = await make_gemini().complete(ModelRequest(system=(), tools=(), messages=(Message("user", "x"),)))
    assert (response.message.content, response.tool_calls, response.stop_reason) == ("", (), "SAFETY")
