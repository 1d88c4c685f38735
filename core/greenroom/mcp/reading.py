"""Messages a server sent that the SDK's JSON reader refused and JSON allows.

The SDK reads each message with pydantic's JSON parser, which refuses a string holding an
escaped lone surrogate (``"\\ud800"``): valid JSON, and what Python's ``json.dumps`` writes
for text that was not valid Unicode (a file name, a process's output). The SDK hands the
error on in the message's place, so a result carrying one was lost and its call waited out
its whole timeout. ``Rereading`` wraps a transport's read stream and reads such a message
again with Python's ``json``, each lone surrogate becoming U+FFFD, as a UTF-8 reader shows
it; everything else passes as it came.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
import pydantic

from greenroom._support.text import printable
from greenroom.mcp.sdk import SessionMessage, mcp_types

Item = SessionMessage | Exception


def reread(exc: BaseException | None) -> SessionMessage | None:
    """The message whose text the SDK refused with ``exc``, read with Python's ``json``;
    None when ``exc`` is not such a refusal or the text is not a JSON-RPC message anyway
    (a banner, a stray print: what ``errors.StdoutNoise`` reports)."""
    if not isinstance(exc, pydantic.ValidationError):
        return None
    problems = exc.errors()
    text = problems[0].get("input") if problems and problems[0]["type"] == "json_invalid" else None
    if not isinstance(text, str):
        return None
    try:
        data = json.loads(text)
        fixed = printable(json.dumps(data, ensure_ascii=False))
        return SessionMessage(mcp_types.jsonrpc_message_adapter.validate_json(fixed, by_name=False))
    except (ValueError, RecursionError):  # not JSON, or not JSON-RPC, to Python either
        return None


class Rereading:
    """A transport's read stream, each message the SDK could not read read again
    (``reread``); the SDK's session reads it as it reads its own streams."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    @property
    def last_context(self) -> Any:  # the sender's context, when the transport keeps one
        return getattr(self._inner, "last_context", None)

    async def receive(self) -> Item:
        item: Item = await self._inner.receive()
        if isinstance(item, Exception):
            return reread(item) or item
        return item

    async def aclose(self) -> None:
        await self._inner.aclose()

    def __aiter__(self) -> Rereading:
        return self

    async def __anext__(self) -> Item:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def __aenter__(self) -> Rereading:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


__all__ = ["Rereading", "reread"]
