"""A ``ModelRequest`` -> the ``generateContent`` body: ``systemInstruction``, ``tools`` (one
``functionDeclarations`` list) and ``contents``.

System sections go into one text part, stable sections first. Each tool is a function
declaration whose schema is sent whole as ``parametersJsonSchema`` (JSON Schema, not the
OpenAPI subset of ``parameters``). The history alternates ``user`` and ``model`` turns:
a model turn is its text and ``functionCall`` parts, or the parts the API sent, kept in
``Message.provider_content`` and replayed as they came (their thought signatures on the
same parts); tool results are ``functionResponse`` parts (``response.output``, or
``response.error`` for a failed call) in the user turn after the calls, answering each
call by its id and name, with the result's images as ``inlineData`` parts of the
function response when the model takes them (Gemini 3).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence
from typing import Any

from greenroom import MediaPart, Message, ModelRequest, ToolDescriptor
from greenroom.kit import ordered_system, paired_messages
from greenroom_gemini.settings import IMAGE_TYPES, MAX_IMAGE_BYTES, GeminiSettings

PROVIDER = "gemini"
"""``ProviderContent.provider`` of a turn kept as the API's parts."""

EMPTY_TURN = "(no content)"
"""Stands in for an empty turn: the API rejects a text part without text."""


def system_instruction(request: ModelRequest) -> dict[str, Any] | None:
    """Stable sections, then those that may change, as one text part (None when empty)."""
    stable, volatile = ordered_system(request.system)
    text = "\n\n".join(s.text for s in (*stable, *volatile))
    return {"parts": [{"text": text}]} if text else None


def declaration(tool: ToolDescriptor) -> dict[str, Any]:
    """A tool as a function declaration."""
    return {"name": tool.name, "description": tool.description, "parametersJsonSchema": dict(tool.parameters)}


def contents(request: ModelRequest, settings: GeminiSettings) -> list[dict[str, Any]]:
    """The conversation as ``user`` / ``model`` turns, every call answered in the turn
    after it (a user text after tool results shares their turn)."""
    out: list[dict[str, Any]] = []
    names: dict[str, str] = {}  # call id -> function name, for the responses that answer them

    def push(role: str, parts: list[dict[str, Any]]) -> None:
        if out and out[-1]["role"] == role:
            out[-1]["parts"].extend(parts)
        else:
            out.append({"role": role, "parts": parts})

    for m in paired_messages(request.messages):
        if m.role == "user":
            push("user", [{"text": m.content or EMPTY_TURN}])
        elif m.role == "assistant":
            names.update((c.id, c.name) for c in m.tool_calls)
            push("model", model_parts(m))
        else:
            push("user", [function_response(m, names.get(m.tool_call_id or "", m.name or ""), settings)])
    return out


def model_parts(m: Message) -> list[dict[str, Any]]:
    """A model turn: the API's own parts when it sent some to keep (thought signatures),
    exactly as they came, else text and ``functionCall`` parts."""
    if m.provider_content is not None and m.provider_content.provider == PROVIDER:
        return copy.deepcopy(list(m.provider_content.blocks))
    parts: list[dict[str, Any]] = [{"text": m.content}] if m.content else []
    for c in m.tool_calls:
        # args must be an object; a call whose arguments were malformed is replayed with
        # {} beside the error result that quotes them
        parts.append({"functionCall": {"id": c.id, "name": c.name, "args": dict(c.arguments or {})}})
    return parts or [{"text": EMPTY_TURN}]


def function_response(m: Message, name: str, settings: GeminiSettings) -> dict[str, Any]:
    """A tool result as a ``functionResponse`` part: its text as ``output`` (``error`` for
    a failed call), its images as ``inlineData`` parts when the model takes them; the
    text names every part that is not sent."""
    sent = [settings.images and can_send(p) for p in m.parts]
    text = named_text(m, sent)
    response: dict[str, Any] = {"id": m.tool_call_id or "", "name": name, "response": {}}
    response["response"]["error" if m.is_error else "output"] = text
    images = [p for p, ok in zip(m.parts, sent, strict=True) if ok]
    if images:
        response["parts"] = [{"inlineData": {"mimeType": p.mime_type, "data": p.data}} for p in images]
    return {"functionResponse": response}


def can_send(part: MediaPart) -> bool:
    """Whether a function response can carry this part as inline data."""
    return part.kind == "image" and part.mime_type in IMAGE_TYPES and part.size <= MAX_IMAGE_BYTES


def named_text(m: Message, sent: Sequence[bool]) -> str:
    """The result's text, naming each part the model is not sent (the text names them
    already; a message made by hand may not)."""
    text = m.content
    for part, ok in zip(m.parts, sent, strict=True):
        if not ok and part.placeholder() not in text:
            text = f"{text}\n{part.placeholder()}" if text else part.placeholder()
    return text


__all__ = ["EMPTY_TURN", "PROVIDER", "contents", "declaration", "function_response", "system_instruction"]
