"""An MCP tool result as the model will read it: one greenroom ``ToolResult``, with the
server's secrets masked (``masked``) in its text, its structured content and its blocks."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import attrs

from greenroom._support.redact import mask_json
from greenroom.mcp.sdk import mcp_types
from greenroom.tools import MediaPart, ToolResult


def to_tool_result(result: mcp_types.CallToolResult) -> ToolResult:
    """An MCP tool result as the model will read it.

    Text parts are joined; structured content is kept in ``structured`` (and rendered as
    JSON when there is no text); images and audio become ``parts`` for a model that takes
    them, and short placeholders in the text for one that does not; resources become
    placeholders too (embedded text resources keep their text); ``isError`` becomes
    ``is_error``. The content blocks themselves are kept in ``blocks``.
    """
    lines = [_describe(block) for block in result.content]
    media = tuple(part for block in result.content if (part := _media(block)) is not None)
    structured = result.structured_content
    text = "\n".join(lines)
    if not lines and structured is not None:
        text = json.dumps(structured, sort_keys=True, ensure_ascii=False, default=str)
    if not text and result.is_error:
        text = "the tool reported an error without details"
    # the blocks as the server sent them, so ``greenroom serve`` can pass them on unchanged
    blocks = tuple(result.content)
    return ToolResult(content=text, is_error=bool(result.is_error), structured=structured, blocks=blocks, parts=media)


def masked(result: ToolResult, redact: Callable[[str], str]) -> ToolResult:
    """``result`` with ``redact`` applied to every text in it: the text the model reads,
    the strings of the structured content (keys included), and the text of the content
    blocks passed on to ``greenroom serve``'s clients. Binary blocks (images, audio) stay as sent."""
    content = redact(result.content)
    structured = mask_json(result.structured, redact)
    blocks = tuple(_masked_block(b, redact) for b in result.blocks) if result.blocks is not None else None
    if content == result.content and structured is result.structured and blocks == result.blocks:
        return result
    return attrs.evolve(result, content=content, structured=structured, blocks=blocks)


def _masked_block(block: Any, redact: Callable[[str], str]) -> Any:
    if isinstance(block, mcp_types.TextContent):
        text = redact(block.text)
        return block if text == block.text else block.model_copy(update={"text": text})
    if isinstance(block, mcp_types.EmbeddedResource) and isinstance(block.resource, mcp_types.TextResourceContents):
        text = redact(block.resource.text)
        if text == block.resource.text:
            return block
        return block.model_copy(update={"resource": block.resource.model_copy(update={"text": text})})
    return block


def _media(block: object) -> MediaPart | None:
    """An image or audio block as the part a model that takes it is sent."""
    if isinstance(block, mcp_types.ImageContent):
        return MediaPart("image", block.mime_type, block.data)
    if isinstance(block, mcp_types.AudioContent):
        return MediaPart("audio", block.mime_type, block.data)
    return None


def _describe(block: object) -> str:
    """One content block as text: itself when it is text, else a short placeholder."""
    if isinstance(block, mcp_types.TextContent):
        return block.text
    part = _media(block)
    if part is not None:
        return part.placeholder()
    if isinstance(block, mcp_types.ResourceLink):
        label = block.title or block.name
        return f"[resource link: {label} <{block.uri}>" + (f" ({block.mime_type})]" if block.mime_type else "]")
    if isinstance(block, mcp_types.EmbeddedResource):
        res = block.resource
        mime = f" ({res.mime_type})" if res.mime_type else ""
        if isinstance(res, mcp_types.TextResourceContents):
            return f"[resource <{res.uri}>{mime}]\n{res.text}"
        return f"[resource <{res.uri}>{mime}, {_b64_size(res.blob)} bytes]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"  # a content type newer than this code


def _b64_size(data: str) -> int:
    return len(data) * 3 // 4 - data[-2:].count("=")


__all__ = ["masked", "to_tool_result"]
