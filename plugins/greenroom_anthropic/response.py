"""A Messages API ``message`` (whole, or assembled from a stream) -> a ``ModelResponse``.

Text blocks make the turn's text; ``tool_use`` blocks its calls. A turn with blocks
greenroom has no type for and the API wants back unchanged (``thinking`` and
``redacted_thinking`` with their signatures, a hosted search's ``server_tool_use`` and
``tool_search_tool_result``, the model's code and the calls it made, ``programmatic``) is
kept whole in ``Message.provider_content`` and replayed
verbatim; thinking never becomes the turn's text. Usage: ``input_tokens`` counts every
input token (fresh + cache reads + cache writes), as OpenAI counts them.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom import (
    HostedSearch,
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
from greenroom_anthropic.programmatic import KEPT_RESULTS, from_code, with_container

KEPT_BLOCKS = frozenset({"server_tool_use", "tool_search_tool_result", "thinking", "redacted_thinking", *KEPT_RESULTS})
"""Block types that make a turn kept whole and replayed verbatim (a call the model's code
made does too: its ``caller`` goes back with it)."""

PROVIDER = "anthropic"


def read_message(data: Mapping[str, Any], request: ModelRequest, model: str) -> ModelResponse:
    """The API's ``message`` object -> the turn, its usage, stop reason and searches."""
    content = data.get("content")
    if not isinstance(content, list):
        raise ProviderResponseError(PROVIDER, "the response has no content list", model=model)
    blocks = [b for b in content if isinstance(b, Mapping)]
    texts: list[str] = []
    calls: list[ToolCall] = []
    keep = False
    for i, block in enumerate(blocks):
        kind = block.get("type")
        if kind in KEPT_BLOCKS:
            keep = True
        elif kind == "text":
            texts.append(str(block.get("text") or ""))
        elif kind == "tool_use":
            calls.append(tool_call(block, i, request.step, model))
            keep = keep or from_code(block)
    kept = ProviderContent(PROVIDER, with_container(replayable(blocks, calls), data)) if keep else None
    return ModelResponse(
        message=Message(role="assistant", content="".join(texts), tool_calls=tuple(calls), provider_content=kept),
        usage=read_usage(data.get("usage")),
        stop_reason=data.get("stop_reason"),
        searches=hosted_searches(blocks),
    )


def tool_call(block: Mapping[str, Any], index: int, step: int, model: str) -> ToolCall:
    """A ``tool_use`` block -> a call. Input that is not an object stays as text, for the
    error result that quotes it; a block without a name can be neither run nor sent back:
    a ``ProviderToolCallError`` (the model is asked again)."""
    name = block.get("name")
    if not isinstance(name, str) or not name:
        raise ProviderToolCallError(PROVIDER, f"a tool_use block has no name: {_excerpt(block)}", model=model)
    raw_input = block.get("input")
    args, raw = parse_arguments(raw_input if raw_input is not None else {})
    call_id = block.get("id")
    return ToolCall(
        call_id if isinstance(call_id, str) and call_id else f"toolu_{step}_{index}",
        name,
        args,
        # input arrives as an object; keep text only when it was not one
        None if isinstance(raw_input, Mapping) else raw,
    )


def replayable(blocks: Sequence[Mapping[str, Any]], calls: Sequence[ToolCall]) -> tuple[dict[str, Any], ...]:
    """Copies of a turn's blocks to send back as they came, but sound: no empty text
    block, and each ``tool_use`` with its call's id and an object input (``{}`` when the
    model's was not one; the error result quotes it)."""
    ids = iter([c.id for c in calls])
    out: list[dict[str, Any]] = []
    for block in blocks:
        if _empty_text(block):
            continue
        copied = copy.deepcopy(dict(block))
        if copied.get("type") == "tool_use":
            copied["id"] = next(ids)
            if not isinstance(copied.get("input"), Mapping):
                copied["input"] = {}
        out.append(copied)
    return tuple(out)


def _empty_text(block: Mapping[str, Any]) -> bool:
    # the API rejects an empty text block in a request (a stream can end one empty)
    return block.get("type") == "text" and not block.get("text")


def read_usage(usage: Any) -> Usage:
    """The API's ``usage`` -> ``Usage`` (every input token counted in ``input_tokens``)."""
    if not isinstance(usage, Mapping):
        return Usage()
    fresh = _int(usage.get("input_tokens"))
    read = _int(usage.get("cache_read_input_tokens"))
    written = _int(usage.get("cache_creation_input_tokens"))
    return Usage(
        input_tokens=fresh + read + written,
        output_tokens=_int(usage.get("output_tokens")),
        cached_input_tokens=read,
        cache_write_tokens=written,
    )


def hosted_searches(content: Sequence[Mapping[str, Any]]) -> tuple[HostedSearch, ...]:
    """Each hosted tool search of a response: the model's query and what it loaded."""
    results = {b.get("tool_use_id"): b.get("content") for b in content if b.get("type") == "tool_search_tool_result"}
    out: list[HostedSearch] = []
    for b in content:
        if b.get("type") != "server_tool_use" or not str(b.get("name") or "").startswith("tool_search_tool"):
            continue
        raw_input = b.get("input")
        query = raw_input.get("query", "") if isinstance(raw_input, Mapping) else ""
        result = results.get(b.get("id"))
        names: tuple[str, ...] = ()
        error = None
        if isinstance(result, Mapping):
            if result.get("type") == "tool_search_tool_result_error":
                error = str(result.get("error_code") or "error")
            refs = result.get("tool_references")
            if isinstance(refs, list):
                names = tuple(str(r.get("tool_name")) for r in refs if isinstance(r, Mapping) and r.get("tool_name"))
        out.append(HostedSearch(str(query), names, error))
    return tuple(out)


def _int(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _excerpt(block: Mapping[str, Any], limit: int = 200) -> str:
    text = repr(dict(block))
    return text if len(text) <= limit else text[:limit] + "..."


__all__ = ["read_message", "read_usage"]
