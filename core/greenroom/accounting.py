"""Token accounting of requests: counts of the system part, the tools array and the
messages, and the hash of the cacheable prefix (tools + stable system text).

Accounting only describes a request, so it never raises on what it describes: texts of
any size are counted (``greenroom.tokens`` counts long ones in pieces), arguments nested
past the json module's recursion are rendered by a loop, and text that is not valid
UTF-8 (a lone surrogate from a server's JSON) is hashed byte for byte.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from greenroom import events as ev
from greenroom.models import Message, ModelRequest
from greenroom.tokens import compact_json, count_tokens, tool_json, tool_tokens
from greenroom.tools import ToolDescriptor


class RequestAccounting:
    """Counts what each request sends, reusing what the previous request already counted.

    One per runtime: the tools-array digest and the history count carry from step to step.
    """

    def __init__(self) -> None:
        self._token_cache: dict[int, tuple[Any, int]] = {}
        self._history_tokens: tuple[tuple[Message, ...], int] = ((), 0)
        self._tools_digest: tuple[tuple[ToolDescriptor, ...], Any, int] = ((), hashlib.sha256(), 0)

    def _cached_tool_tokens(self, d: ToolDescriptor) -> tuple[str, int]:
        hit = self._token_cache.get(id(d))
        if hit is None or hit[0][0] is not d:
            text = tool_json(d)
            hit = ((d, text), tool_tokens(d))
            self._token_cache[id(d)] = hit
        return hit[0][1], hit[1]

    def _messages_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of a history, counting only what was appended since the last request
        (a history that was rewritten, by compaction say, is counted afresh)."""
        prev, prev_tokens = self._history_tokens
        n = len(prev)
        # tuple equality compares identity first, item by item, in C
        if 0 < n <= len(messages) and tuple(messages[:n]) == prev:
            total = prev_tokens + sum(message_tokens(m) for m in messages[n:])
        else:
            total = sum(message_tokens(m) for m in messages)
        self._history_tokens = (tuple(messages), total)
        return total

    def describe_request(self, request: ModelRequest, *, hosted_search: bool = False) -> ev.RequestSent:
        """Token counts of the three parts of a request and the cacheable-prefix hash."""
        tools = tuple(request.tools)
        seen_tools, seen_hash, seen_tokens = self._tools_digest
        if seen_tools == tools:  # the same definitions as last step: identity checks only
            h, tools_tok = seen_hash.copy(), seen_tokens
        else:
            h = hashlib.sha256()
            tools_tok = 0
            for d in tools:
                text, n = self._cached_tool_tokens(d)
                tools_tok += n
                h.update(_utf8(text))
                h.update(b"\n")
            self._tools_digest = (tools, h.copy(), tools_tok)
        # tools left to the provider's hosted search are not rendered into the prompt
        deferred = request.deferred if hosted_search else frozenset()
        if deferred:
            tools_tok -= sum(self._cached_tool_tokens(d)[1] for d in tools if d.name in deferred)
            h.update(b"\x00deferred\x00" + _utf8("\n".join(sorted(deferred))))
        stable = "\n\n".join(s.text for s in request.system if s.stable)
        h.update(b"\x00system\x00" + _utf8(stable))
        messages_tok = self._messages_tokens(request.messages)
        return ev.RequestSent(
            step=request.step,
            system_tokens=_text_tokens(request.system_text),
            tools_tokens=tools_tok,
            messages_tokens=messages_tok,
            prefix_hash=h.hexdigest()[:16],
            tool_names=tuple(d.name for d in request.tools),
            deferred_tools=tuple(d.name for d in request.tools if d.name in deferred),
        )


def _utf8(text: str) -> bytes:
    # the same bytes as text.encode() for any valid text; a lone surrogate is kept, not an error
    return text.encode("utf-8", "surrogatepass")


@functools.lru_cache(maxsize=64)
def _text_tokens(text: str) -> int:
    """System prompts repeat from step to step; count each distinct one once."""
    return count_tokens(text)


_MESSAGE_TOKENS: dict[int, tuple[Message, int]] = {}


def message_tokens(m: Message) -> int:
    hit = _MESSAGE_TOKENS.get(id(m))
    if hit is not None and hit[0] is m:
        return hit[1]
    n = count_tokens(m.content)
    for c in m.tool_calls:
        n += count_tokens(c.name) + count_tokens(
            compact_json(c.arguments) if c.arguments is not None else (c.raw_arguments or "")
        )
    if len(_MESSAGE_TOKENS) > 50_000:
        _MESSAGE_TOKENS.clear()
    _MESSAGE_TOKENS[id(m)] = (m, n)
    return n
