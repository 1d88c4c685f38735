"""What the openai provider sends beyond text, and what it keeps: tool results' images
(Responses: ``input_image`` in the output; Chat: a ``user`` message after the turn's
results) and sounds (Chat's ``input_audio``), placeholders for a model that takes none;
strict tool schemas only where the schema already is strict; reasoning items kept with
their encrypted content and replayed; lone surrogates never fail a request; a malformed
tool call is asked again, then named; the ``[model]`` switches by model family."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

import pytest
from support.fake_llm_server import (
    FakeLLMServer,
    Reply,
    SleepRecorder,
    chat_completion,
    openai_tool_call,
    responses_object,
)

from greenroom.config import ConfigError
from greenroom.models import Message, ModelRequest, ToolCall
from greenroom.providers import ProviderToolCallError
from greenroom.tools import MediaPart, ToolDescriptor
from greenroom_openai import make_openai_model
from greenroom_openai.strict import strict_allowed

pytestmark = pytest.mark.anyio

PNG = MediaPart("image", "image/png", base64.b64encode(b"\x89PNG fake").decode())
WAV = MediaPart("audio", "audio/wav", base64.b64encode(b"RIFF fake").decode())
OGG = MediaPart("audio", "audio/ogg", base64.b64encode(b"OggS fake").decode())
SHOT = ToolDescriptor("screenshot", "Take a screenshot.", {"type": "object", "properties": {}})


def media_history() -> ModelRequest:
    content = f"two parts {PNG.placeholder()} {WAV.placeholder()}"
    return ModelRequest(
        system=(),
        tools=(SHOT,),
        messages=(
            Message("user", "look"),
            Message("assistant", "", tool_calls=(ToolCall("c1", "screenshot"), ToolCall("c2", "screenshot"))),
            Message("tool", content, tool_call_id="c1", name="screenshot", parts=(PNG, WAV)),
            Message("tool", "no parts", tool_call_id="c2", name="screenshot"),
            Message("user", "and?"),
        ),
    )


async def test_chat_images_and_sounds_follow_the_turns_results(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(body=chat_completion("ok")))
    await make_openai(images=True, audio=True).complete(media_history())
    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "user", "user"]
    assert messages[2]["content"] == f"two parts {PNG.placeholder()} {WAV.placeholder()}"  # tool messages are text
    assert messages[4] == {
        "role": "user",
        "content": [
            {"type": "text", "text": "Returned by screenshot (call c1):"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG.data}"}},
            {"type": "input_audio", "input_audio": {"data": WAV.data, "format": "wav"}},
        ],
    }
    assert messages[5] == {"role": "user", "content": "and?"}


async def test_a_model_without_images_reads_the_placeholders(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    server.push(Reply(body=chat_completion("ok")), Reply(body=responses_object([])))
    bare = Message("tool", "nothing named", tool_call_id="c1", name="screenshot", parts=(PNG, OGG))
    request = media_history()
    request = ModelRequest(request.system, request.tools, (*request.messages[:2], bare, *request.messages[3:]))
    await make_openai().complete(request)  # another server: images and audio are off
    await make_openai(api="responses", images=True).complete(request)
    chat, responses = (r.body for r in server.requests)
    assert [m["role"] for m in chat["messages"]] == ["user", "assistant", "tool", "tool", "user"]
    assert chat["messages"][2]["content"] == f"nothing named\n{PNG.placeholder()}\n{OGG.placeholder()}"
    # the Responses API takes the image; a sound is named only
    assert responses["input"][3] == {
        "type": "function_call_output",
        "call_id": "c1",
        "output": [
            {"type": "input_text", "text": f"nothing named\n{OGG.placeholder()}"},
            {"type": "input_image", "image_url": f"data:image/png;base64,{PNG.data}"},
        ],
    }
    assert responses["input"][4] == {"type": "function_call_output", "call_id": "c2", "output": "no parts"}


def test_switches_by_model_family_and_server() -> None:
    def settings(name: str, **options: Any) -> Any:
        return make_openai_model(name, options).settings  # type: ignore[attr-defined]

    assert settings("gpt-4o-mini").images and settings("gpt-4.1").images and settings("o3").images
    assert not settings("gpt-3.5-turbo").images and not settings("o3-mini").images
    assert settings("gpt-4o-audio-preview").audio and not settings("gpt-4o").audio
    assert settings("gpt-5.4", api="responses").tool_search and not settings("gpt-5.2", api="responses").tool_search
    assert not settings("gpt-5.4").tool_search  # Chat Completions has no tool search
    assert (
        settings("gpt-5", api="responses").reasoning_items and not settings("gpt-4.1", api="responses").reasoning_items
    )
    assert settings("ft:gpt-4o-mini:acme::abc").images and settings("gpt-4o").strict_tools
    local = settings("gpt-5.4", api="responses", base_url="http://localhost:8000/v1")
    assert not (local.images or local.strict_tools or local.tool_search or local.reasoning_items)
    assert settings("qwen2.5:7b", base_url="http://localhost:11434/v1", images=True).images


@pytest.mark.parametrize(
    ("options", "path", "message"),
    [
        ({"images": "yes"}, "model.images", '"auto", true or false'),
        ({"tool_search": True}, "model.tool_search", 'needs api = "responses"'),
        ({"api": "responses", "audio": True}, "model.audio", 'needs api = "chat"'),
    ],
)
def test_bad_switches_name_the_key(options: dict[str, Any], path: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        make_openai_model("gpt-test", options)
    assert info.value.path == path


STRICT = {"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"], "additionalProperties": False}
OPTIONAL = {"type": "object", "properties": {"a": {"type": "integer"}}, "additionalProperties": False}


def test_strict_only_where_the_schema_already_is() -> None:
    assert strict_allowed(STRICT)
    nested = {**STRICT, "properties": {"a": {"type": "array", "items": STRICT}}}
    assert strict_allowed(nested)
    assert not strict_allowed(OPTIONAL)  # an optional property: strict would make it required
    assert not strict_allowed({**STRICT, "additionalProperties": True})
    assert not strict_allowed({"type": "object", "properties": {"a": {"type": "integer"}}, "required": ["a"]})
    assert not strict_allowed({**STRICT, "properties": {"a": {"type": "integer", "default": 1}}})
    assert not strict_allowed({**STRICT, "properties": {"a": {"type": "string", "minLength": 2}}})
    assert not strict_allowed({**STRICT, "properties": {"a": {}}})  # anything goes: no strict form
    assert not strict_allowed({"type": "object"})


async def test_strict_tools_on_the_wire(server: FakeLLMServer, make_openai: Callable[..., Any]) -> None:
    tools = (ToolDescriptor("exact", "Strict already.", STRICT), ToolDescriptor("loose", "Not strict.", OPTIONAL))
    request = ModelRequest(system=(), tools=tools, messages=(Message("user", "hi"),))
    server.push(Reply(body=chat_completion("ok")), Reply(body=responses_object([])))
    await make_openai(strict_tools=True).complete(request)
    await make_openai(api="responses", strict_tools=True).complete(request)
    chat, responses = (r.body["tools"] for r in server.requests)
    assert chat[0]["function"] == {
        "name": "exact",
        "description": "Strict already.",
        "parameters": STRICT,
        "strict": True,
    }
    assert "strict" not in chat[1]["function"] and chat[1]["function"]["parameters"] == OPTIONAL
    assert [t["strict"] for t in responses] == [True, False]


REASONING = {
    "type": "reasoning",
    "id": "rs_1",
    "summary": [{"type": "summary_text", "text": "thinking"}],
    "encrypted_content": "gAAAA==",
}


async def test_reasoning_items_are_kept_and_sent_back(server: FakeLLMServer, make_openai: Callable[..., Any]) -> None:
    output: list[dict[str, Any]] = [
        {"type": "reasoning", "id": "rs_0", "summary": []},  # no encrypted content: it cannot be sent back
        REASONING,
        {
            "type": "message",
            "id": "msg_1",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "Let me look.", "annotations": []}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "screenshot",
            "arguments": "{}",
            "status": "completed",
        },
    ]
    server.push(Reply(body=responses_object(output)), Reply(body=responses_object([])))
    model = make_openai(api="responses", reasoning_items=True)
    first = await model.complete(ModelRequest(system=(), tools=(SHOT,), messages=(Message("user", "look"),)))
    assert first.message.content == "Let me look."  # reasoning is never part of the text
    assert first.message.provider_content is not None and first.message.provider_content.provider == "openai-responses"
    history = (
        Message("user", "look"),
        first.message,
        Message("tool", "done", tool_call_id="call_1", name="screenshot"),
    )
    await model.complete(ModelRequest(system=(), tools=(SHOT,), messages=history))
    body = server.requests[1].body
    assert server.requests[0].body["include"] == ["reasoning.encrypted_content"]
    assert body["input"] == [
        {"role": "user", "content": "look"},
        REASONING,
        {"role": "assistant", "content": "Let me look."},
        {"type": "function_call", "call_id": "call_1", "name": "screenshot", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "done"},
    ]


async def test_lone_surrogates_never_fail_a_request(server: FakeLLMServer, make_openai: Callable[..., Any]) -> None:
    broken = "caf\udce9 \ud83d"  # a Latin-1 byte read with surrogateescape, half a pair
    tools = (
        ToolDescriptor(f"t{broken}", f"about {broken}", {"type": "object", "properties": {broken: {"type": "string"}}}),
    )
    messages = (
        Message("user", broken),
        Message("assistant", broken, tool_calls=(ToolCall("c1", "t", None, f'{{"x": "{broken}"}}'),)),
        Message("tool", broken, tool_call_id="c1", name="t"),
    )
    server.push(Reply(body=chat_completion("ok")), Reply(body=responses_object([])))
    await make_openai().complete(ModelRequest(system=(), tools=tools, messages=messages))
    await make_openai(api="responses").complete(ModelRequest(system=(), tools=tools, messages=messages))
    for rec in server.requests:
        text = rec.raw.decode("utf-8")  # valid UTF-8 on the wire
        assert "caf\ufffd \ufffd" in text and "\\ud" not in text


async def test_a_malformed_tool_call_is_asked_again_then_named(
    server: FakeLLMServer, sleeps: SleepRecorder, make_openai: Callable[..., Any]
) -> None:
    null = chat_completion(None, [{"id": "call_1", "type": "function", "function": None}])
    nameless = chat_completion(None, [openai_tool_call("call_2", "", "{}")])
    server.push(Reply(body=null), Reply(body=chat_completion(None, [openai_tool_call("call_3", "t", "{}")])))
    response = await make_openai().complete(ModelRequest(system=(), tools=(), messages=(Message("user", "go"),)))
    assert [c.id for c in response.tool_calls] == ["call_3"] and len(sleeps.waits) == 1
    server.push(Reply(body=nameless), Reply(body=nameless), Reply(body=nameless))
    with pytest.raises(ProviderToolCallError, match="after 3 attempts: the model asked for a tool call without a name"):
        await make_openai().complete(ModelRequest(system=(), tools=(), messages=(Message("user", "go"),)))
    unnamed = responses_object([{"type": "function_call", "id": "fc", "call_id": "c", "arguments": "{}"}])
    server.push(*[Reply(body=unnamed)] * 3)
    with pytest.raises(ProviderToolCallError, match="without a name"):
        await make_openai(api="responses").complete(
            ModelRequest(system=(), tools=(), messages=(Message("user", "go"),))
        )
    assert json.loads(server.requests[-1].raw)["input"] == [{"role": "user", "content": "go"}]
