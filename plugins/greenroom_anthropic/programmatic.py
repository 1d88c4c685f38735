"""Programmatic tool calling on the Messages API: the model writes code that Anthropic runs
in its code execution container, and that code calls the tools of
``ModelRequest.programmatic``; greenroom answers each of those calls like any other.

On the wire (as the SDK's types have it): the code execution tool
(``{"type": "code_execution_20260120", "name": "code_execution"}``) among the tools, and
``allowed_callers: ["direct", "code_execution_20260120"]`` on each tool the code may call.
A call the code makes is an ordinary ``tool_use`` block with a ``caller``
(``{"type": "code_execution_20260120", "tool_id": <the server_tool_use block's id>}``); the
response names the container the code runs in (``container.id``; ``delta.container`` of
``message_delta`` in a stream). The turn is kept whole (``provider_content``: its
``server_tool_use``, the ``tool_use`` blocks with their callers, and, when the code has
finished, its ``code_execution_tool_result``) and replayed verbatim; the next request
answers the calls with ``tool_result`` blocks as usual and names the container again
(``container``), so the code resumes with the results. The container's id is kept in the
turn as a block of greenroom's own (``CONTAINER``), never sent.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom import Message

CODE_EXECUTION = "code_execution_20260120"
"""The code execution tool's version: the first that programmatic tool calling takes."""

CODE_TOOL: dict[str, str] = {"type": CODE_EXECUTION, "name": "code_execution"}
ALLOWED_CALLERS = ("direct", CODE_EXECUTION)

CONTAINER = "greenroom_container"
"""The type of the block of greenroom's own that keeps a turn's container id."""

KEPT_RESULTS = frozenset(
    {"code_execution_tool_result", "bash_code_execution_tool_result", "text_editor_code_execution_tool_result"}
)
"""Block types of the code's own results: a turn with one is kept whole."""

SINCE = (4, 5)
"""The first Claude Opus and Sonnet version that calls tools from code."""

_VERSION = re.compile(r"claude-(?:opus|sonnet)-(\d+)(?:-(\d)(?!\d))?")


def supported(model: str) -> bool:
    """Whether ``model`` (by name) calls tools from code: Claude Opus and Sonnet 4.5 and later."""
    found = _VERSION.search(model.lower())
    return found is not None and (int(found.group(1)), int(found.group(2) or 0)) >= SINCE


def from_code(block: Mapping[str, Any]) -> bool:
    """Whether a ``tool_use`` block is a call the model's code made."""
    caller = block.get("caller")
    return isinstance(caller, Mapping) and caller.get("type") not in (None, "direct")


def with_container(blocks: tuple[dict[str, Any], ...], data: Mapping[str, Any]) -> tuple[dict[str, Any], ...]:
    """A kept turn's blocks, with the container its message names (if any) kept beside them."""
    container = data.get("container")
    ident = container.get("id") if isinstance(container, Mapping) else None
    return (*blocks, {"type": CONTAINER, "id": ident}) if isinstance(ident, str) and ident else blocks


def sent(blocks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """A kept turn's blocks as the API takes them back: greenroom's own left out."""
    return [b for b in blocks if b.get("type") != CONTAINER]


def waiting_container(messages: Sequence[Message]) -> str | None:
    """The container whose code waits for this request's tool results: that of the last
    assistant turn, when one of its calls came from code."""
    for m in reversed(messages):
        if m.role != "assistant":
            continue
        kept = m.provider_content
        if kept is None or kept.provider != "anthropic":
            return None
        blocks = kept.blocks
        if not any(b.get("type") == "tool_use" and from_code(b) for b in blocks):
            return None
        return next((str(b["id"]) for b in blocks if b.get("type") == CONTAINER and b.get("id")), None)
    return None


__all__ = ["ALLOWED_CALLERS", "CODE_TOOL", "CONTAINER", "from_code", "supported", "waiting_container"]
