"""Token accounting of requests: counts of the system part, the tools array and the
messages, and the hash of the cacheable prefix (tools + stable system text).

Accounting only describes a request, so it never raises on what it describes: texts of
any size are counted (``greenroom.tokens.counting`` counts long ones in pieces), arguments nested
past the json module's recursion are rendered by a loop, and text that is not valid
UTF-8 (a lone surrogate from a server's JSON) is hashed byte for byte. The images and
sounds of tool results count with their estimated tokens (``greenroom.tokens.media``).
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Sequence
from typing import Any

from greenroom import events as ev
from greenroom._support.compact import compact_json
from greenroom._support.memo import IdentityMemo
from greenroom.models import Message, ModelRequest
from greenroom.tokens.counting import count_tokens, tool_json
from greenroom.tokens.media import media_tokens
from greenroom.tokens.tool_costs import tool_costs
from greenroom.tools import ToolDescriptor


class _ToolsArray:
    """What was worked out for one tools array: the hash of its definitions, each one's
    tokens, and its names."""

    __slots__ = ("counts", "deferred", "hash", "names", "tokens", "tools")

    def __init__(self, tools: tuple[ToolDescriptor, ...], h: Any, counts: list[int]) -> None:
        self.tools = tools
        self.hash = h
        self.counts = counts
        self.tokens = sum(counts)
        self.names = tuple(d.name for d in tools)
        # the names left to a hosted search, theirs in array order, their tokens, and
        # the prefix hash with them added
        self.deferred: tuple[frozenset[str], tuple[str, ...], int, Any] = (frozenset(), (), 0, h)

    def left_to_search(self, deferred: frozenset[str]) -> tuple[tuple[str, ...], int, Any]:
        """The array's names among ``deferred``, their tokens, and the prefix hash with
        them added (not to be updated: copy it). Worked out once per set: a native step
        sends every tool and marks the same ones again, most often as the same object,
        which costs an identity check (set equality has no such shortcut, so an equal
        set is compared once and then held instead)."""
        known = self.deferred[0]
        if known is deferred:
            return self.deferred[1:]
        if known == deferred:  # an equal set from a new run: remember this one
            self.deferred = (deferred, *self.deferred[1:])
        else:
            names = tuple(n for n in self.names if n in deferred)
            tokens = sum(c for n, c in zip(self.names, self.counts, strict=True) if n in deferred)
            h = self.hash.copy()
            h.update(b"\x00deferred\x00" + _utf8("\n".join(sorted(deferred))))
            self.deferred = (deferred, names, tokens, h)
        return self.deferred[1:]


_TEXTS_LIMIT = 8192
"""Definitions whose JSON text is kept between arrays (an inject step re-hashes the array
with one tool more); an array larger than this is hashed again only when it changes."""


class RequestAccounting:
    """Counts what each request sends, reusing what the previous request already counted.

    One per runtime: the tools-array digest and the history count carry from step to step.
    A step whose tools array is the previous one costs identity checks only; token counts
    of definitions come from ``tool_costs`` (kept on disk by catalog digest).
    """

    def __init__(self, family: str = "") -> None:
        self.family = family
        """The provider family whose rules price images (``greenroom.tokens.media``)."""
        self._texts: IdentityMemo[str] = IdentityMemo(_TEXTS_LIMIT)
        self._history_tokens: tuple[tuple[Message, ...], int] = ((), 0)
        self._array = _ToolsArray((), hashlib.sha256(), [])

    def _text(self, d: ToolDescriptor) -> str:
        hit = self._texts.lookup((d,))
        return hit[0] if hit is not None else self._texts.put((d,), tool_json(d))

    def _tools_array(self, tools: tuple[ToolDescriptor, ...]) -> _ToolsArray:
        seen = self._array
        # the same definitions as last step: one identity check, or, for an equal tuple
        # made anew (a new run), a pass of identity checks item by item in C, once
        if seen.tools is tools:
            return seen
        if seen.tools == tools:
            seen.tools = tools
            return seen
        h = hashlib.sha256()
        for d in tools:
            h.update(_utf8(self._text(d)))
            h.update(b"\n")
        self._array = _ToolsArray(tools, h, tool_costs(tools, "definition_tokens"))
        return self._array

    def _messages_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of a history, counting only what was appended since the last request
        (a history that was rewritten, by compaction say, is counted afresh)."""
        prev, prev_tokens = self._history_tokens
        n = len(prev)
        # tuple equality compares identity first, item by item, in C
        family = self.family
        if 0 < n <= len(messages) and tuple(messages[:n]) == prev:
            total = prev_tokens + sum(message_tokens(m, family) for m in messages[n:])
        else:
            total = sum(message_tokens(m, family) for m in messages)
        self._history_tokens = (tuple(messages), total)
        return total

    def describe_request(self, request: ModelRequest, *, hosted_search: bool = False) -> ev.RequestSent:
        """Token counts of the three parts of a request and the cacheable-prefix hash."""
        array = self._tools_array(tuple(request.tools))
        tools_tok = array.tokens
        # tools left to the provider's hosted search are not rendered into the prompt
        deferred = request.deferred if hosted_search else frozenset()
        deferred_names: tuple[str, ...] = ()
        if deferred:
            deferred_names, deferred_tok, with_deferred = array.left_to_search(deferred)
            tools_tok -= deferred_tok
            h = with_deferred.copy()
        else:
            h = array.hash.copy()
        stable = "\n\n".join(s.text for s in request.system if s.stable)
        h.update(b"\x00system\x00" + _utf8(stable))
        messages_tok = self._messages_tokens(request.messages)
        return ev.RequestSent(
            step=request.step,
            system_tokens=_text_tokens(request.system_text),
            tools_tokens=tools_tok,
            messages_tokens=messages_tok,
            prefix_hash=h.hexdigest()[:16],
            tool_names=array.names,
            deferred_tools=deferred_names,
        )


def _utf8(text: str) -> bytes:
    # the same bytes as text.encode() for any valid text; a lone surrogate is kept, not an error
    return text.encode("utf-8", "surrogatepass")


@functools.lru_cache(maxsize=64)
def _text_tokens(text: str) -> int:
    """System prompts repeat from step to step; count each distinct one once."""
    return count_tokens(text)


_MESSAGE_TOKENS: dict[int, tuple[Message, int]] = {}


def message_tokens(m: Message, family: str = "") -> int:
    """The tokens of one message: its text, its calls, and the estimated tokens of its
    images and sounds for a model of ``family``."""
    hit = _MESSAGE_TOKENS.get(id(m))
    if hit is not None and hit[0] is m:
        return hit[1] + (sum(media_tokens(p, family) for p in m.parts) if m.parts else 0)
    n = count_tokens(m.content)
    for c in m.tool_calls:
        n += count_tokens(c.name) + count_tokens(
            compact_json(c.arguments) if c.arguments is not None else (c.raw_arguments or "")
        )
    if len(_MESSAGE_TOKENS) > 50_000:
        _MESSAGE_TOKENS.clear()
    _MESSAGE_TOKENS[id(m)] = (m, n)
    return n + (sum(media_tokens(p, family) for p in m.parts) if m.parts else 0)
