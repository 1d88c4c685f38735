"""Streaming: both APIs' events, read through the SDK, -> text deltas and then the one
complete ``ModelResponse``.

Chat Completions (``ChatStream``): ``chat.completion.chunk`` objects whose first choice
carries ``delta.content`` (the text, yielded as it comes), ``delta.tool_calls`` (pieces
of each call, keyed by ``index``: the id and name once, the argument text in
fragments) and at last ``finish_reason``; with ``stream_options.include_usage`` one more
chunk, with no choices, carries the usage (cached tokens included).

Responses (``ResponsesStream``): ``response.output_text.delta`` (the text, yielded),
``response.output_item.added`` / ``response.function_call_arguments.delta`` /
``response.output_item.done`` (each output item whole, reasoning items with their
encrypted content), then ``response.completed`` (or ``response.incomplete``) with the
response, its usage and status; ``response.failed`` and ``error`` end it with the
API's error.

Either way the assembled answer is read by the model's own ``parse``, exactly like a
whole one, and only once the stream said it was complete: a stream cut short raises
(and is retried while no text was shown), never yields a half-parsed call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from greenroom import ModelRequest, ModelResponse, ProviderConnectionError, ProviderError, error_for_status

if TYPE_CHECKING:
    from greenroom import ProviderModel

PROVIDER = "openai"

RETRIED_CODES = {"rate_limit_exceeded": 429, "server_error": 500, "internal_error": 500, "overloaded": 503}
"""Error codes of a stream's ``error`` (sent after a 200) that stand for a status the
retry loop retries; any other code is handled like a 400."""


def stream_failure(error: Any, model: str) -> ProviderError:
    """The ``ProviderError`` for an error a stream reported (``{"code", "message", ...}``)."""
    if not isinstance(error, Mapping):
        return error_for_status(PROVIDER, 500, f"the stream failed: {error!r}", model=model)
    code = str(error.get("code") or error.get("type") or "")
    message = str(error.get("message") or "the stream failed")
    detail = f"{message} ({code})" if code else message
    return error_for_status(PROVIDER, RETRIED_CODES.get(code, 400), detail, model=model)


class _Call:
    __slots__ = ("arguments", "function", "id", "kind", "name", "whole")

    def __init__(self) -> None:
        self.id = ""
        self.kind = ""
        self.name = ""
        self.arguments: list[str] = []
        self.whole: Any = None  # arguments some servers send as an object
        self.function = False

    def json(self) -> dict[str, Any]:
        arguments = self.whole if self.whole is not None else "".join(self.arguments)
        function = {"name": self.name, "arguments": arguments} if self.function else None
        return {"id": self.id, "type": self.kind or "function", "function": function}


class ChatStream:
    """One streamed Chat Completions attempt's chunks -> text, then the response."""

    def __init__(self, model: ProviderModel, request: ModelRequest) -> None:
        self.model = model
        self.request = request
        self.text: list[str] = []
        self.refusal: list[str] = []
        self.calls: dict[int, _Call] = {}
        self.finish_reason: str | None = None
        self.usage: Mapping[str, Any] | None = None

    def feed(self, chunk: Any) -> Iterable[str]:
        if not isinstance(chunk, Mapping):
            return ()
        if isinstance(chunk.get("usage"), Mapping):
            self.usage = chunk["usage"]
        shown: list[str] = []
        for choice in chunk.get("choices") or ():
            if not isinstance(choice, Mapping) or choice.get("index", 0) != 0:
                continue  # greenroom asks for one choice
            delta = choice.get("delta")
            if isinstance(delta, Mapping):
                for key, kept in (("content", self.text), ("refusal", self.refusal)):
                    piece = delta.get(key)
                    if isinstance(piece, str) and piece:
                        kept.append(piece)
                        shown.append(piece)
                for piece in delta.get("tool_calls") or ():
                    self._call_piece(piece)
            if choice.get("finish_reason"):
                self.finish_reason = str(choice["finish_reason"])
        return shown

    def _call_piece(self, piece: Any) -> None:
        if not isinstance(piece, Mapping):
            self.calls.setdefault(len(self.calls), _Call())  # read as a call without a function
            return
        index = piece.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            # a server that numbers nothing: a new id starts a call, the rest continue it
            index = len(self.calls) if piece.get("id") or not self.calls else max(self.calls)
        call = self.calls.setdefault(index, _Call())
        if piece.get("id"):
            call.id = str(piece["id"])
        if piece.get("type"):
            call.kind = str(piece["type"])
        fn = piece.get("function")
        if not isinstance(fn, Mapping):
            return
        call.function = True
        name = fn.get("name")
        if isinstance(name, str) and name and name != call.name:
            call.name += name
        arguments = fn.get("arguments")
        if isinstance(arguments, str):
            call.arguments.append(arguments)
        elif isinstance(arguments, Mapping):
            call.whole = arguments

    def finish(self) -> ModelResponse:
        if self.finish_reason is None:
            raise ProviderConnectionError(
                PROVIDER, "the stream ended before the answer was complete (no finish_reason)", model=self.model.model
            )
        message: dict[str, Any] = {"role": "assistant", "content": "".join(self.text) or None}
        if self.refusal:
            message["refusal"] = "".join(self.refusal)
        if self.calls:
            message["tool_calls"] = [self.calls[i].json() for i in sorted(self.calls)]
        choice = {"index": 0, "message": message, "finish_reason": self.finish_reason}
        return self.model.parse({"choices": [choice], "usage": self.usage or {}}, self.request)


class ResponsesStream:
    """One streamed Responses attempt's events -> text, then the response."""

    def __init__(self, model: ProviderModel, request: ModelRequest) -> None:
        self.model = model
        self.request = request
        self.items: dict[int, dict[str, Any]] = {}
        self.response: Mapping[str, Any] | None = None

    def feed(self, event: Any) -> Iterable[str]:
        if not isinstance(event, Mapping):
            return ()
        kind = event.get("type")
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            delta = event.get("delta")
            return (delta,) if isinstance(delta, str) and delta else ()
        index = event.get("output_index")
        item = event.get("item")
        if kind in ("response.output_item.added", "response.output_item.done") and isinstance(item, Mapping):
            self.items[index if isinstance(index, int) else len(self.items)] = dict(item)
        elif kind == "response.function_call_arguments.delta" and index in self.items:
            call = self.items[index]
            call["arguments"] = str(call.get("arguments") or "") + str(event.get("delta") or "")
        elif kind in ("response.completed", "response.incomplete") and isinstance(event.get("response"), Mapping):
            self.response = event["response"]
        elif kind == "response.failed":
            response = event.get("response")
            raise stream_failure(response.get("error") if isinstance(response, Mapping) else None, self.model.model)
        elif kind == "error":
            raise stream_failure(event, self.model.model)
        return ()

    def finish(self) -> ModelResponse:
        if self.response is None:
            raise ProviderConnectionError(
                PROVIDER, "the stream ended before response.completed", model=self.model.model
            )
        data = dict(self.response)
        if not data.get("output") and self.items:
            # a server that sends the output item by item only
            data["output"] = [self.items[i] for i in sorted(self.items)]
        return self.model.parse(data, self.request)


__all__ = ["ChatStream", "ResponsesStream", "stream_failure"]
