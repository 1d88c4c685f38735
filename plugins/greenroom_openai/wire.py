"""Pieces both OpenAI APIs share: tool definitions (strict where the schema allows it),
a call's argument text, usage numbers, tool calls read from the answer (a malformed one
is a ``ProviderToolCallError``), and the images and sounds of tool results."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom import MediaPart, Message, ProviderToolCallError, ToolCall, ToolDescriptor
from greenroom.kit import IdentityMemo, parse_arguments
from greenroom_openai.settings import OpenAISettings
from greenroom_openai.strict import strict_allowed

PROVIDER = "openai"

IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
"""The image types both APIs take (as base64 data URLs)."""

MAX_IMAGE_BYTES = 20 * 1024 * 1024
"""A larger image is sent as its placeholder text."""

AUDIO_FORMATS = {"audio/wav": "wav", "audio/x-wav": "wav", "audio/wave": "wav", "audio/mpeg": "mp3", "audio/mp3": "mp3"}
"""Chat Completions' ``input_audio`` formats, by MIME type."""

_FUNCTIONS: IdentityMemo[dict[str, Any]] = IdentityMemo(8192, weak=True)
"""Each tool's definition fields, by descriptor and strictness: a schema is checked for
strict mode once, and the same definition is sent on every step. Held weakly: a catalog
descriptor's schema holds its whole catalog, which must go with its runtime."""


def function_fields(tool: ToolDescriptor, strict: bool) -> dict[str, Any]:
    """``name``, ``description``, ``parameters`` and ``strict`` of a tool (``strict`` is
    true only when asked for and the schema already meets strict mode's rules). Shared:
    copy before changing it."""
    hit = _FUNCTIONS.lookup((tool,), strict)
    if hit is not None:
        return hit[0]
    fields: dict[str, Any] = {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)}
    fields["strict"] = strict and strict_allowed(tool.parameters)
    return _FUNCTIONS.put((tool,), fields, strict)


def arguments_text(call: ToolCall) -> str:
    """The arguments as the model wrote them when we have them: a malformed text must
    reach the model again verbatim next to the error result, and the cache sees the
    same bytes."""
    if call.raw_arguments is not None:
        return call.raw_arguments
    return json.dumps(dict(call.arguments or {}), ensure_ascii=False)


def int_of(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def text_of(content: Any) -> str:
    """Message content as text: a string, or a list of parts (some servers send parts)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, Mapping) and isinstance(p.get("text"), str))
    return ""


def tool_call(model: str, call_id: str, name: Any, arguments: Any) -> ToolCall:
    """A call the model asked for; a call without a name cannot be answered, so the model
    is asked again (``ProviderToolCallError``). Arguments that are not a JSON object are
    kept as text for the runtime's error result."""
    if not isinstance(name, str) or not name.strip():
        raise ProviderToolCallError(
            PROVIDER, f"the model asked for a tool call without a name (call {call_id!r})", model=model
        )
    args, raw = parse_arguments(arguments)
    return ToolCall(call_id, name, args, raw)


def not_a_function(model: str, what: str) -> ProviderToolCallError:
    return ProviderToolCallError(PROVIDER, f"the model asked for a tool call greenroom cannot run: {what}", model=model)


# ----------------------------------------------------------------------------- media


def data_url(part: MediaPart) -> str:
    return f"data:{part.mime_type};base64,{part.data}"


def image_sendable(part: MediaPart, settings: OpenAISettings) -> bool:
    return settings.images and part.kind == "image" and part.mime_type in IMAGE_TYPES and part.size <= MAX_IMAGE_BYTES


def audio_sendable(part: MediaPart, settings: OpenAISettings) -> bool:
    return settings.audio and part.kind == "audio" and part.mime_type in AUDIO_FORMATS


def named_text(m: Message, sent: Sequence[bool]) -> str:
    """The result's text, naming every part the model is not sent (the content names
    them already; a message made by hand may not)."""
    text = m.content
    for part, ok in zip(m.parts, sent, strict=True):
        if not ok and part.placeholder() not in text:
            text = f"{text}\n{part.placeholder()}" if text else part.placeholder()
    return text


def chat_media(results: Sequence[Message], settings: OpenAISettings) -> dict[str, Any] | None:
    """The ``user`` message that carries the images and sounds of one turn's tool results
    (Chat Completions takes text only in a tool message), or None when there are none to
    send. It comes after the last result, so every call is still answered right after
    its turn; each result's parts follow a line naming the call."""
    content: list[dict[str, Any]] = []
    for m in results:
        parts: list[dict[str, Any]] = []
        for part in m.parts:
            if image_sendable(part, settings):
                parts.append({"type": "image_url", "image_url": {"url": data_url(part)}})
            elif audio_sendable(part, settings):
                parts.append(
                    {"type": "input_audio", "input_audio": {"data": part.data, "format": AUDIO_FORMATS[part.mime_type]}}
                )
        if parts:
            content.append({"type": "text", "text": f"Returned by {m.name or 'the tool'} (call {m.tool_call_id}):"})
            content.extend(parts)
    return {"role": "user", "content": content} if content else None


def chat_result_text(m: Message, settings: OpenAISettings) -> str:
    sent = [image_sendable(p, settings) or audio_sendable(p, settings) for p in m.parts]
    return named_text(m, sent)


def responses_output(m: Message, settings: OpenAISettings) -> str | list[dict[str, Any]]:
    """A ``function_call_output``'s output: the text, or (with images the model takes)
    the text then ``input_image`` parts. The Responses API takes no sound there."""
    sent = [image_sendable(p, settings) for p in m.parts]
    text = named_text(m, sent)
    if not any(sent):
        return text
    out: list[dict[str, Any]] = [{"type": "input_text", "text": text}] if text else []
    out.extend({"type": "input_image", "image_url": data_url(p)} for p, ok in zip(m.parts, sent, strict=True) if ok)
    return out
