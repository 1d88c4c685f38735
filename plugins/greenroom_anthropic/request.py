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

from greenroom import MediaPart, Message, ModelRequest, ToolDescriptor
from greenroom.kit import (
    CLIENT_SEARCH_TOOL,
    SEARCH_DESCRIPTION,
    SEARCH_PARAMETERS,
    found_tools,
    ordered_system,
    paired_messages,
)
from greenroom_anthropic.programmatic import ALLOWED_CALLERS, CODE_TOOL, sent
from greenroom_anthropic.settings import IMAGE_TYPES, MAX_IMAGE_BYTES, AnthropicSettings

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
    """The tools sent with ``defer_loading``: those of ``request.deferred`` that are sent.
    The search tool that comes with them is always loaded, so the API's rule that one
    tool at least must be is kept even when every other tool is deferred."""
    if not settings.defers or not request.deferred:
        return frozenset()
    return frozenset(t.name for t in request.tools if t.name in request.deferred)


def search_tool(settings: AnthropicSettings) -> dict[str, Any]:
    """The search tool sent with deferred tools: the hosted one, or greenroom's own as a
    client tool (its calls are ``CLIENT_SEARCH_TOOL`` calls, which the plugin that
    deferred the tools answers with its search)."""
    hosted = settings.hosted_search
    if hosted is not None:
        return hosted
    return {"name": CLIENT_SEARCH_TOOL, "description": SEARCH_DESCRIPTION, "input_schema": dict(SEARCH_PARAMETERS)}


def system_blocks(request: ModelRequest, settings: AnthropicSettings) -> list[dict[str, Any]]:
    """Stable sections, the breakpoint, then the sections that may change."""
    stable, volatile = ordered_system(request.system)
    blocks: list[dict[str, Any]] = [{"type": "text", "text": s.text} for s in stable]
    if blocks and settings.prompt_cache:
        blocks[-1]["cache_control"] = ephemeral()
    blocks.extend({"type": "text", "text": s.text} for s in volatile)
    return blocks


def tool_blocks(request: ModelRequest, settings: AnthropicSettings, deferred: frozenset[str]) -> list[dict[str, Any]]:
    """Loaded tools (and the search tool, when tools are deferred; the code execution tool,
    when tools may be called from code) with the breakpoint on the last of them, then the
    deferred tools, in request order."""
    coded = request.programmatic if settings.programmatic else frozenset()

    def wire(t: ToolDescriptor) -> dict[str, Any]:
        return {**tool_json(t), "allowed_callers": list(ALLOWED_CALLERS)} if t.name in coded else tool_json(t)

    tools = [wire(t) for t in request.tools if t.name not in deferred]
    if deferred:
        tools.append(search_tool(settings))
    if coded:
        tools.append(dict(CODE_TOOL))
    if tools and settings.prompt_cache:
        # deferred tools are not part of the rendered prefix: no breakpoint of their own
        tools[-1]["cache_control"] = ephemeral()
    tools.extend({**wire(t), "defer_loading": True} for t in request.tools if t.name in deferred)
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

    searches: set[str] = set()  # ids of the calls of greenroom's search, whose results load tools
    for m in paired_messages(request.messages):
        if m.role == "user":
            push("user", [{"type": "text", "text": m.content or EMPTY_TURN}])
        elif m.role == "assistant":
            push("assistant", assistant_blocks(m))
            searches.update(c.id for c in m.tool_calls if c.name == CLIENT_SEARCH_TOOL)
        else:
            loads = deferred if settings.client_search and m.tool_call_id in searches else frozenset()
            push("user", [tool_result(m, settings, loads)])
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
        return copy.deepcopy(sent(m.provider_content.blocks))
    blocks: list[dict[str, Any]] = []
    if m.content:
        blocks.append({"type": "text", "text": m.content})
    for c in m.tool_calls:
        # input must be an object; a call whose arguments were malformed is replayed as
        # {} beside the error result that quotes them
        blocks.append({"type": "tool_use", "id": c.id, "name": c.name, "input": dict(c.arguments or {})})
    return blocks or [{"type": "text", "text": EMPTY_TURN}]


def tool_result(m: Message, settings: AnthropicSettings, loads: frozenset[str] = frozenset()) -> dict[str, Any]:
    """A ``tool_result`` block: text, with images when the model takes them; for a search
    of greenroom's, one ``tool_reference`` block per tool of ``loads`` (the deferred ones)
    it found, which the API expands into their definitions (a search that found none of
    them is sent as its text)."""
    content: str | list[dict[str, Any]] = m.content or EMPTY_RESULT
    found = [name for name in found_tools(m) if name in loads] if loads else []
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
    "search_tool",
    "system_blocks",
    "tool_blocks",
]
