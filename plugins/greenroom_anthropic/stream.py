"""Streaming: the Messages API's events, read through the SDK, -> text deltas and then the
one complete ``ModelResponse``.

The SDK parses the server-sent events (``client.messages.create(stream=True)``) and
raises the stream's ``error`` event; ``StreamAssembler`` puts the message together
from them: ``message_start`` (the usage so far, cache reads and writes included),
``content_block_start`` / ``content_block_delta`` / ``content_block_stop`` (text,
``input_json_delta`` pieces of a tool's input, ``thinking_delta`` and
``signature_delta``, citations), ``message_delta`` (stop reason, final usage) and
``message_stop``. The assembled message is read exactly like a non-streamed one, so a
tool call only exists once its block and the message are complete: a stream that stops
short never yields a half-parsed call.

Only text blocks' deltas are shown: thinking is kept whole (with its signature) in the
turn's ``provider_content``, never yielded.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from greenroom import (
    ModelRequest,
    ModelResponse,
    ProviderConnectionError,
    ProviderError,
    ProviderResponseError,
    ProviderTimeoutError,
    error_for_status,
)
from greenroom.kit import parse_json_object
from greenroom_anthropic.response import read_message

PROVIDER = "anthropic"

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each error type of the API stands for; an ``error`` event in a stream
(which arrives after a 200) is handled as that status would be: ``overloaded_error``
is retried like a 529."""


class StreamAssembler:
    """One streamed attempt's events, one by one (as the SDK's ``to_dict`` gives them), ->
    the visible text each adds, and at the end the ``message`` they describe, read as a
    whole response (the stream reader ``greenroom.ProviderModel`` asks for)."""

    def __init__(self, request: ModelRequest, model: str = "") -> None:
        self.request = request
        self.model = model
        self.started = False
        self.stopped = False
        self.usage: dict[str, Any] = {}
        self.stop_reason: str | None = None
        self.container: dict[str, Any] | None = None
        self._blocks: dict[int, dict[str, Any]] = {}
        # (block index, field) -> the pieces streamed so far, joined when the block stops
        # (``text``, ``thinking``, and ``input``: a tool's input JSON)
        self._pieces: dict[tuple[int, str], list[str]] = {}

    def feed(self, event: Any) -> tuple[str, ...]:
        """Take one event; return the visible text it adds (a text block's delta)."""
        if not isinstance(event, Mapping):
            raise self._broken(f"an event that is not an object: {type(event).__name__}")
        text = self._event(event)
        return (text,) if text else ()

    def finish(self) -> ModelResponse:
        """The whole response, once ``message_stop`` came; before, the stream broke."""
        return read_message(self.message(), self.request, self.model)

    def _event(self, event: Mapping[str, Any]) -> str | None:
        kind = event.get("type")
        if kind == "message_start":
            message = event.get("message")
            usage = message.get("usage") if isinstance(message, Mapping) else None
            self._merge_usage(usage)
            self.started = True
            return None
        if not self.started:
            raise self._broken(f"a {kind!r} event came before message_start")
        if kind == "content_block_start":
            block = event.get("content_block")
            if not isinstance(block, Mapping):
                raise self._broken("a content_block_start without its block")
            self._blocks[self._index(event)] = copy.deepcopy(dict(block))
        elif kind == "content_block_delta":
            return self._delta(self._index(event), event.get("delta"))
        elif kind == "content_block_stop":
            self._stop(self._index(event))
        elif kind == "message_delta":
            delta = event.get("delta")
            if isinstance(delta, Mapping) and delta.get("stop_reason") is not None:
                self.stop_reason = str(delta["stop_reason"])
            if isinstance(delta, Mapping) and isinstance(delta.get("container"), Mapping):
                self.container = dict(delta["container"])  # where the model's code runs
            self._merge_usage(event.get("usage"))
        elif kind == "message_stop":
            self.stopped = True
        return None  # ping and event types added later carry nothing to keep

    def message(self) -> dict[str, Any]:
        """The ``message`` object the events described (with ``message_stop``)."""
        if not self.stopped:
            raise ProviderConnectionError(
                PROVIDER, "the stream ended before message_stop (the connection was closed early)", model=self.model
            )
        for index in sorted({i for i, _ in self._pieces}):  # blocks whose stop never came: whole by now
            self._stop(index)
        content = [self._blocks[i] for i in sorted(self._blocks)]
        out = {"content": content, "usage": dict(self.usage), "stop_reason": self.stop_reason}
        return {**out, "container": self.container} if self.container is not None else out

    # ------------------------------------------------------------------ internals
    def _index(self, event: Mapping[str, Any]) -> int:
        index = event.get("index")
        if not isinstance(index, int) or isinstance(index, bool):
            raise self._broken(f"a {event.get('type')} event without a block index")
        if event.get("type") != "content_block_start" and index not in self._blocks:
            raise self._broken(f"a {event.get('type')} event for block {index}, which never started")
        return index

    def _delta(self, index: int, delta: Any) -> str | None:
        if not isinstance(delta, Mapping):
            return None
        block = self._blocks[index]
        kind = delta.get("type")
        if kind == "text_delta" and block.get("type") == "text":
            text = str(delta.get("text") or "")
            self._pieces.setdefault((index, "text"), []).append(text)
            return text or None
        if kind == "input_json_delta":
            self._pieces.setdefault((index, "input"), []).append(str(delta.get("partial_json") or ""))
        elif kind == "thinking_delta" and block.get("type") == "thinking":
            self._pieces.setdefault((index, "thinking"), []).append(str(delta.get("thinking") or ""))
        elif kind == "signature_delta" and block.get("type") == "thinking":
            block["signature"] = str(delta.get("signature") or "")
        elif kind == "citations_delta" and block.get("type") == "text":
            citations = block.get("citations")
            if not isinstance(citations, list):
                citations = block["citations"] = []
            citations.append(delta.get("citation"))
        return None

    def _stop(self, index: int) -> None:
        block = self._blocks[index]
        for field in ("text", "thinking"):
            pieces = self._pieces.pop((index, field), None)
            if pieces is not None:
                block[field] = str(block.get(field) or "") + "".join(pieces)
        pieces = self._pieces.pop((index, "input"), None)
        text = "".join(pieces or ())
        if not text.strip():
            return  # no input streamed: the start block's own ({} for a tool without parameters)
        parsed = parse_json_object(text)
        # not an object (cut off, a list, nested too deeply): the text, which the call
        # carries into the error result that quotes it
        block["input"] = parsed if parsed is not None else text

    def _merge_usage(self, usage: Any) -> None:
        if not isinstance(usage, Mapping):
            return
        for key, value in usage.items():
            # message_delta's counts are totals so far; null means "not sent"
            if value is not None:
                self.usage[key] = value

    def _broken(self, what: str) -> ProviderResponseError:
        return ProviderResponseError(PROVIDER, f"the event stream is not the Messages API's: {what}", model=self.model)


def stream_error(exc: Exception, sdk: Any, model: str, endpoint: str) -> ProviderError | None:
    """The ``ProviderError`` for what went wrong while reading a stream, or None when
    the ordinary translation applies: an ``error`` event (the SDK raises it as a status
    error carrying the 200 the stream began with) is judged by its error type, and a
    connection cut mid-stream is a (retryable) connection error."""
    status_error = getattr(sdk, "APIStatusError", None)
    if status_error is not None and isinstance(exc, status_error) and exc.status_code < 400:
        body: Mapping[str, Any] = exc.body if isinstance(exc.body, Mapping) else {}
        inner = body.get("error")
        error: Mapping[str, Any] = inner if isinstance(inner, Mapping) else body
        kind = str(error.get("type") or "")
        message = str(error.get("message") or exc)
        detail = f"{message} ({kind}, in the event stream)" if kind else f"{message} (in the event stream)"
        return error_for_status(PROVIDER, ERROR_STATUS.get(kind, 500), detail, model=model, endpoint=endpoint)
    if _is_httpx(exc, "TimeoutException"):
        return ProviderTimeoutError(PROVIDER, type(exc).__name__, model=model, endpoint=endpoint)
    if _is_httpx(exc, "TransportError"):
        return ProviderConnectionError(
            PROVIDER, f"the stream broke: {type(exc).__name__}: {exc}", model=model, endpoint=endpoint
        )
    return None


def _is_httpx(exc: Exception, name: str) -> bool:
    """Whether ``exc`` is an ``httpx`` (or ``httpx2``, which newer SDKs use) error of the
    class ``name`` (``TransportError``: a connection reset or closed mid-body, a failed
    read; ``TimeoutException``: a read that waited too long)."""
    return any(c.__name__ == name and c.__module__.split(".")[0] in ("httpx", "httpx2") for c in type(exc).__mro__)


__all__ = ["ERROR_STATUS", "StreamAssembler", "stream_error"]
