"""A ``GenerateContentResponse`` (whole, or assembled from a stream) -> a ``ModelResponse``.

The first candidate's parts make the turn: its text parts (not the thoughts) the text,
its ``functionCall`` parts the calls. A turn with parts the API wants back unchanged
(a ``thoughtSignature`` on any part, thought summaries) is kept whole in
``Message.provider_content`` and replayed as it came, each call with the id the run
answers it by. Usage: ``promptTokenCount`` (cached tokens included) and the prompt of
a tool's use are the input, ``cachedContentTokenCount`` the cached part of it,
``candidatesTokenCount`` and ``thoughtsTokenCount`` the output.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom import (
    Message,
    ModelRequest,
    ModelResponse,
    ProviderContent,
    ProviderResponseError,
    ProviderToolCallError,
    ToolCall,
    Usage,
)
from greenroom.kit import parse_arguments
from greenroom_gemini.request import PROVIDER

RETRIED_FINISH = frozenset({"MALFORMED_FUNCTION_CALL", "MALFORMED_RESPONSE"})
"""Finish reasons of an answer the model must give again: a call the API could not read
(the model is sampled again, like a call without a name)."""


def read_response(data: Mapping[str, Any], request: ModelRequest, model: str) -> ModelResponse:
    """The API's response object -> the turn, its usage and finish reason."""
    candidates = data.get("candidates")
    if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
        feedback = data.get("promptFeedback")
        reason = feedback.get("blockReason") if isinstance(feedback, Mapping) else None
        if reason:
            raise ProviderResponseError(PROVIDER, f"the prompt was blocked ({reason})", model=model)
        raise ProviderResponseError(PROVIDER, "the response has no candidates", model=model)
    candidate = candidates[0]
    finish = candidate.get("finishReason")
    content = candidate.get("content")
    raw_parts = content.get("parts") if isinstance(content, Mapping) else None
    parts = [p for p in raw_parts if isinstance(p, Mapping)] if isinstance(raw_parts, list) else []
    if finish in RETRIED_FINISH:
        why = candidate.get("finishMessage") or finish
        raise ProviderToolCallError(PROVIDER, f"the API could not read the model's answer: {why}", model=model)
    texts: list[str] = []
    calls: list[ToolCall] = []
    keep = False
    for i, part in enumerate(parts):
        if part.get("thoughtSignature") or part.get("thought"):
            keep = True
        if isinstance(part.get("functionCall"), Mapping):
            calls.append(tool_call(part["functionCall"], i, request.step, model))
        elif isinstance(part.get("text"), str) and not part.get("thought"):
            texts.append(part["text"])
    kept = ProviderContent(PROVIDER, replayable(parts, calls)) if keep else None
    return ModelResponse(
        message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls), provider_content=kept),
        usage=read_usage(data.get("usageMetadata")),
        stop_reason=finish if isinstance(finish, str) else None,
    )


def tool_call(call: Mapping[str, Any], index: int, step: int, model: str) -> ToolCall:
    """A ``functionCall`` -> a call. Arguments that are not an object (or nest too deeply)
    stay as text for the error result that quotes them; a call without a name can be
    neither run nor answered: a ``ProviderToolCallError`` (the model is asked again)."""
    name = call.get("name")
    if not isinstance(name, str) or not name:
        raise ProviderToolCallError(PROVIDER, f"a functionCall has no name: {_excerpt(call)}", model=model)
    raw = call.get("args")
    args, text = parse_arguments(raw if raw is not None else {})
    call_id = call.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else f"call_{step}_{index}",
        name,
        args,
        None if isinstance(raw, Mapping) and args is not None else text,
    )


def replayable(parts: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall]) -> tuple[dict[str, Any], ...]:
    """Copies of a turn's parts to send back as they came, but sound: no empty text part
    unless it carries a signature, each ``functionCall`` with its call's id and object
    arguments (``{}`` when the model's were not one; the error result quotes them)."""
    ids = iter(calls)
    out: list[dict[str, Any]] = []
    for part in parts:
        if part.get("text") == "" and not part.get("thoughtSignature"):
            continue
        copied = copy.deepcopy(dict(part))
        if isinstance(copied.get("functionCall"), Mapping):
            call = next(ids)
            copied["functionCall"] = {**copied["functionCall"], "id": call.id, "args": dict(call.arguments or {})}
        out.append(copied)
    return tuple(out)


def read_usage(usage: Any) -> Usage:
    """``usageMetadata`` -> ``Usage`` (thinking counted as output, as it is billed)."""
    if not isinstance(usage, Mapping):
        return Usage()
    return Usage(
        input_tokens=_int(usage.get("promptTokenCount")) + _int(usage.get("toolUsePromptTokenCount")),
        output_tokens=_int(usage.get("candidatesTokenCount")) + _int(usage.get("thoughtsTokenCount")),
        cached_input_tokens=_int(usage.get("cachedContentTokenCount")),
    )


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _excerpt(value: Mapping[str, Any], limit: int = 200) -> str:
    text = repr(dict(value))
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = ["read_response", "read_usage", "replayable", "tool_call"]
