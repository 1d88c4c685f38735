"""A ``ModelRequest`` -> the Messages API's ``system``, ``tools`` and ``messages``.

Cache breakpoints (``cache_control``, at most four) go on the last tool the model sees
up front, the last stable system block, the last block of the conversation and the
block that ended the previous request (module docstring of the package). Deferred
tools come last with ``defer_loading``, never with a breakpoint. A tool result carries
its images as ``image`` blocks when the model takes them, or the names of the tools a
search found as ``tool_reference`` blocks, which the API loads.
"""

from __future__ import annotations

import copy
from typing import Any

from greenroom.models import Message, ModelRequest
from greenroom.providers._messages import ordered_system, paired_messages
from greenroom.providers.anthropic.settings import IMAGE_TYPES, MAX_IMAGE_BYTES, AnthropicSettings
from greenroom.tools import MediaPart, ToolDescriptor

EMPTY_TURN = "(no content)"
EMPTY_RESULT = "(no output)"
"""Stand in for an empty turn or tool output: the API rejects empty text, and dropping
the turn would break the user/assistant alternation."""


def ephemeral() -> dict[str, str]:
    """A breakpoint marker (a fresh dict each time: blocks are changed per request)."""
    return {"type": "ephemeral"}


def tool_json(tool: ToolDescriptor) -> dict[str, Any]:
    """A tool definition as the API takes it."""
    return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}


def deferred_on_wire(request: ModelRequest, settings: AnthropicSettings) -> frozenset[str]:
    """The tools sent with ``defer_loading``: those of ``request.deferred`` that are sent,
    as long as one tool stays loaded (the API rejects a request that defers them all;
    the hosted search tool counts, greenroom's own search tool is one of the tools)."""
    if not settings.defers or not request.deferred:
        return frozenset()
    names = frozenset(t.name for t in request.tools if t.name in request.deferred)
    if settings.client_search and len(names) == len(request.tools):
        return frozenset()
    return names


def system_blocks(request: ModelRequest, settings: AnthropicSettings) -> list[dict[str, Any]]:
    """Stable sections, the breakpoint, then the sections that may change."""
    stable, volatile = ordered_system(request.system)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": s.text} for s in stable]
    if blocks and settings.prompt_cache:
        blocks[-1]["cache_control"] = ephemeral()
    blocks.extend({"type": "text", "text": s.text} for s in volatile)
    return blocks


def tool_blocks(request: ModelRequest, settings: AnthropicSettings, deferred: frozenset[str]) -> list[dict[str, Any]]:
    """Loaded tools (and the hosted search tool, when tools are deferred to it) with the
    breakpoint on the last of them, then the deferred tools, in request order."""
    tools = [tool_json(t) for t in request.tools if t.name not in deferred]
    hosted = settings.hosted_search
    if deferred and hosted is not None:
        tools.append(hosted)
    if tools and settings.prompt_cache:
        # deferred tools are not part of the rendered prefix: no breakpoint of their own
        tools[-1]["cache_control"] = ephemeral()
    tools.extend({**tool_json(t), "defer_loading": True} for t in request.tools if t.name in deferred)
    return tools


def message_blocks(
    request: ModelRequest, settings: AnthropicSettings, deferred: frozenset[str]
) -> list[dict[str, Any]]:
    """The conversation as alternating user and assistant turns, every call answered."""
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        # tool results and a user text after them share one user turn (the API wants
        # results in the turn right after the tool_use), and consecutive results are one
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for m in paired_messages(request.messages):
        if m.role == "user":
            push("user", [{"type": "text", "text": m.content or EMPTY_TURN}])
        elif m.role == "assistant":
            push("assistant", assistant_blocks(m))
        else:
            push("user", [tool_result(m, settings, deferred)])
    if out and settings.prompt_cache:
        out[-1]["content"][-1]["cache_control"] = ephemeral()
        previous_end = _previous_request_end(out)
        if previous_end is not None:
            previous_end["cache_control"] = ephemeral()
    return out


def assistant_blocks(m: Message) -> list[dict[str, Any]]:
    """An assistant turn: the API's own blocks when it sent some to keep (thinking, hosted
    searches), exactly as they came, else text and ``tool_use`` blocks."""
    if m.provider_content is not None and m.provider_content.provider == "anthropic":
        # copied: breakpoints are set on the blocks of the request being built
        return copy.deepcopy(list(m.provider_content.blocks))
    blocks: list[dict[str, Any]] = []
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    for c in m.tool_calls:
        # input must be an object; a call whose arguments were malformed is replayed as
        # {} beside the error result that quotes them
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments or {})})
    return blocks or [{"type": "text", "text": EMPTY_TURN}]


def tool_result(m: Message, settings: AnthropicSettings, deferred: frozenset[str]) -> dict[str, Any]:
    """A ``tool_result`` block: text, with images when the model takes them, or the
    ``tool_reference`` blocks of the deferred tools a search found."""
    content: str | list[dict[str, Any]] = m.content or EMPTY_RESULT
    found = [name for name in found_tools(m) if name in deferred] if settings.client_search else []
    if found:
        content = [{"type": "tool_reference", "tool_name": name} for name in found]
    elif m.parts:
        sent = [settings.images and can_send(p) for p in m.parts]
        images = [p for p, ok in zip(m.parts, sent, strict=True) if ok]
        text = m.content
        for part, ok in zip(m.parts, sent, strict=True):
            # the content names every part already; a message made by hand may not
            if not ok and part.placeholder() not in text:
                text = f"{text}\n{part.placeholder()}" if text else part.placeholder()
        if images:
            blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
            blocks.extend(image_block(p) for p in images)
            content = blocks
        else:
            content = text or EMPTY_RESULT
    return {"type": "tool_result", "tool_use_id": m.tool_call_id or "", "content": content, "is_error": m.is_error}


def found_tools(m: Message) -> tuple[str, ...]:
    """The names a search result found, for ``tool_reference`` blocks (none for any
    other result)."""
    return ()


def can_send(part: MediaPart) -> bool:
    """Whether the API takes this part as an image block."""
    return part.kind == "image" and part.mime_type in IMAGE_TYPES and part.size <= MAX_IMAGE_BYTES


def image_block(part: MediaPart) -> dict[str, Any]:
    """An ``image`` block with a base64 source."""
    return {"type": "image", "source": {"type": "base64", "media_type": part.mime_type, "data": part.data}}


def _previous_request_end(messages: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The last block the previous model call was sent: the end of the turn before the
    last assistant turn (whatever follows that assistant turn is new since then)."""
    for i in range(len(messages) - 1, 0, -1):
        if messages[i]["role"] == "assistant":
            block: dict[str, Any] = messages[i - 1]["content"][-1]
            return block
    return None


__all__ = [
    "deferred_on_wire",
    "message_blocks",
    "system_blocks",
    "tool_blocks",
]
