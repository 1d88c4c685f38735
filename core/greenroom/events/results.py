"""The events of a tool call's result: the result itself, and what the limits left out of it.

A result's images and sounds are named, never carried: ``ToolExecuted.parts`` says each
one's kind, media type and size, so a trace stays small whatever a tool returned (the
session keeps the parts themselves, to send them again).
"""

from __future__ import annotations

from typing import Any

import attrs

from greenroom.events.kinds import Event, short


@attrs.frozen
class ToolExecuted(Event):
    kind: str = attrs.field(init=False, default="tool_result")
    step: int = 0
    call_id: str = ""
    tool: str = ""
    arguments: Any = None
    is_error: bool = False
    content: str = ""
    duration_ms: float = 0.0
    decided_by: str | None = None
    parts: tuple[dict[str, Any], ...] = ()
    """The images and sounds that went to the model with ``content``: ``{"kind",
    "mime_type", "bytes"}`` each (their data is not in the event)."""

    def describe(self) -> str:
        return f"  {'error' if self.is_error else 'ok'} {self.tool}: {short(self.content, 200)}"

    @property
    def style(self) -> str:
        return "red" if self.is_error else ""


@attrs.frozen
class ResultCut(Event):
    """A tool result was over ``[agent] max_result_tokens`` and was cut to its head and tail."""

    kind: str = attrs.field(init=False, default="result_cut")
    step: int = 0
    call_id: str = ""
    tool: str = ""
    limit: int = 0
    original_chars: int = 0
    kept_chars: int = 0
    kept_tokens: int = 0
    omitted_tokens: int = 0
    """Estimated from the kept text's tokens per character (the left-out text is not counted)."""

    def describe(self) -> str:
        return (
            f"  cut {self.tool}'s result: kept {self.kept_chars:,} of {self.original_chars:,} chars "
            f"({self.kept_tokens:,} tokens, limit {self.limit:,})"
        )

    @property
    def style(self) -> str:
        return "yellow"


@attrs.frozen
class MediaDropped(Event):
    """Images or sounds of a tool result were left out: with the result's text they were
    over ``[agent] max_result_tokens``. The model read a note saying so; the text still
    names each part."""

    kind: str = attrs.field(init=False, default="media_dropped")
    step: int = 0
    call_id: str = ""
    tool: str = ""
    limit: int = 0
    kept: int = 0
    dropped: int = 0
    dropped_tokens: int = 0
    """Estimated (``greenroom.tokens.media``)."""

    def describe(self) -> str:
        return (
            f"  left out {self.dropped} of {self.kept + self.dropped} media parts of {self.tool}'s result "
            f"(about {self.dropped_tokens:,} tokens, limit {self.limit:,})"
        )

    @property
    def style(self) -> str:
        return "yellow"
