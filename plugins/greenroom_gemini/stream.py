"""Streaming: ``streamGenerateContent`` (server-sent events, read through the SDK) -> text
deltas and then the one complete ``ModelResponse``.

Each event is a whole ``GenerateContentResponse`` holding the next parts of the first
candidate: text in pieces (each yielded as it comes; thoughts never), function calls
whole, a ``thoughtSignature`` on a piece (sometimes on a last, empty one), the usage so
far, and on the last event the ``finishReason``. ``StreamAssembler`` joins the pieces
into the parts a whole response would have (a signature stays on the part it came with)
and reads them exactly like one, so a stream that ends without a finish reason raises
(and is retried while no text was shown) and never yields a half-read turn.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

from greenroom import ModelRequest, ModelResponse, ProviderConnectionError, ProviderResponseError
from greenroom_gemini.request import PROVIDER
from greenroom_gemini.response import read_response

TEXT_KEYS = frozenset({"text", "thought", "thoughtSignature"})
"""A part with no other key is a piece of text (or of a thought) that joins the one before."""


class StreamAssembler:
    """One streamed attempt's events (as ``GeminiModel.decode`` gives them) -> the visible
    text each adds, then the whole response (a ``greenroom`` stream reader)."""

    def __init__(self, request: ModelRequest, model: str = "") -> None:
        self.request = request
        self.model = model
        self.parts: list[dict[str, Any]] = []
        self.usage: Any = None
        self.feedback: Any = None
        self.finish_reason: str | None = None
        self.finish_message: Any = None

    def feed(self, event: Any) -> tuple[str, ...]:
        """Take one event; return the visible text it adds."""
        if not isinstance(event, Mapping):
            raise ProviderResponseError(
                PROVIDER, f"an event of the stream is not an object: {type(event).__name__}", model=self.model
            )
        if event.get("usageMetadata") is not None:
            self.usage = event["usageMetadata"]  # totals so far: the last one counts
        if event.get("promptFeedback") is not None:
            self.feedback = event["promptFeedback"]
        candidates = event.get("candidates")
        if not isinstance(candidates, list) or not candidates or not isinstance(candidates[0], Mapping):
            return ()
        candidate = candidates[0]
        if isinstance(candidate.get("finishReason"), str):
            self.finish_reason = candidate["finishReason"]
            self.finish_message = candidate.get("finishMessage")
        content = candidate.get("content")
        parts = content.get("parts") if isinstance(content, Mapping) else None
        shown: list[str] = []
        for part in parts if isinstance(parts, list) else ():
            if isinstance(part, Mapping):
                text = self._add(part)
                if text:
                    shown.append(text)
        return tuple(shown)

    def finish(self) -> ModelResponse:
        """The whole response, once the finish reason came (or the prompt was blocked)."""
        blocked = isinstance(self.feedback, Mapping) and self.feedback.get("blockReason")
        if self.finish_reason is None and not blocked:
            raise ProviderConnectionError(
                PROVIDER, "the stream ended before the answer was complete (no finishReason)", model=self.model
            )
        candidate: dict[str, Any] = {
            "content": {"role": "model", "parts": self.parts},
            "finishReason": self.finish_reason,
        }
        if self.finish_message is not None:
            candidate["finishMessage"] = self.finish_message
        data: dict[str, Any] = {"candidates": [candidate] if self.finish_reason else [], "usageMetadata": self.usage}
        if self.feedback is not None:
            data["promptFeedback"] = self.feedback
        return read_response(data, self.request, self.model)

    def _add(self, part: Mapping[str, Any]) -> str | None:
        """Add one part; the visible text it brings."""
        last = self.parts[-1] if self.parts else None
        if set(part) <= TEXT_KEYS and isinstance(part.get("text"), str):
            thought = bool(part.get("thought"))
            joins = (
                last is not None
                and set(last) <= TEXT_KEYS
                and isinstance(last.get("text"), str)
                and bool(last.get("thought")) == thought
                and not last.get("thoughtSignature")
            )
            if joins and last is not None:
                last["text"] += part["text"]
                if part.get("thoughtSignature"):
                    last["thoughtSignature"] = part["thoughtSignature"]
            else:
                self.parts.append(dict(part))
            return None if thought else part["text"]
        self.parts.append(copy.deepcopy(dict(part)))
        return None


__all__ = ["StreamAssembler"]
