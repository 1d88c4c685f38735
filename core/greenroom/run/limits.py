"""Bounds on what reaches the model: a tool result over ``[agent] max_result_tokens`` is cut
(its head and tail kept, with a note the model reads; its last sentence says how to read
more, which a plugin may say, ``greenroom.results.fitting``), the images
and sounds of a result count against the same limit (``bound_parts``: those that do not
fit beside its text are left out, and the text says so), and a user input over ``[agent]
max_input_tokens`` is refused before any model call.

Both use bounded counts (``greenroom.tokens.counting.count_tokens_upto`` and the token-bounded
prefix and suffix): the work grows with the limit, never with the text, so a 5 MB result
costs about what a result just over the limit does.
"""

from __future__ import annotations

import attrs

from greenroom.tokens.counting import count_tokens_upto, prefix_within, suffix_within, surely_within
from greenroom.tokens.media import media_tokens
from greenroom.tools import ToolResult

NOTE_TOKENS = 200
"""Room kept for the note and the marker, so the cut result with them stays within the limit
(a plugin's last sentence for the note included, when it is not much longer than ``ADVICE``)."""

HEAD_SHARE = 0.75
"""The head gets most of the room (what a tool says first is usually what was asked for);
the tail keeps the end, where logs and tracebacks put the error."""

ADVICE = (
    "To get less at once, call the tool again with narrower arguments (a filter, a smaller range, fewer "
    "fields) or page through the output (an offset/limit or page argument) if the tool has one."
)
"""The note's last sentence when nothing else says how to read more."""

_SNAP = 0.2
"""A cut moves to the nearest line break within this share of the kept text, so the model
reads whole lines; with no line break that near, it stays where the tokens ran out."""


@attrs.frozen
class Truncation:
    """How a tool result was cut: what was kept and what was left out, in characters and
    tokens (the left-out tokens are estimated from the kept text, since counting a
    megabyte that nobody reads is the work the cut saves)."""

    limit: int
    original_chars: int
    head_chars: int
    tail_chars: int
    kept_tokens: int
    omitted_tokens: int
    advice: str = ADVICE
    """How to read more: the note's last sentence (a plugin's, where it kept the whole result);
    empty when the limit left no room for a note."""

    @property
    def omitted_chars(self) -> int:
        return self.original_chars - self.head_chars - self.tail_chars

    def note(self) -> str:
        """The note at the top of the cut result."""
        kept = f"the first {self.head_chars:,}" + (f" and the last {self.tail_chars:,}" if self.tail_chars else "")
        return (
            f"[greenroom cut this result: it was {self.original_chars:,} characters, over the limit of "
            f"{self.limit:,} tokens for one tool result. Shown: {kept} characters; left out: "
            f"{self.omitted_chars:,} characters (about {self.omitted_tokens:,} tokens)"
            + (", marked below" if self.tail_chars else ", at the end")
            + f". {self.advice}]"
        )

    def marker(self) -> str:
        """The line that stands where the left-out text was."""
        return f"[... {self.omitted_chars:,} characters (about {self.omitted_tokens:,} tokens) left out here ...]"


def bound_result(result: ToolResult, max_tokens: int) -> tuple[ToolResult, Truncation | None]:
    """``result`` as the model may read it: unchanged when its content is within
    ``max_tokens``, else cut to its head and tail with a note, and the cut as data.

    A cut result carries no structured content: that is the whole value the content was
    rendered from, and handing on all of it would undo the cut.
    """
    text = result.content
    # the common result, far under the limit, is settled by its length: not counted
    if surely_within(text, max_tokens) or count_tokens_upto(text, max_tokens) is not None:
        return result, None
    room = max(1, max_tokens - NOTE_TOKENS)
    for _ in range(4):
        cut = _cut(text, room, max_tokens)
        content = rendered(text, cut)
        # the note's numbers and line breaks re-encode a little differently: check the whole
        if content is not None:
            return ToolResult(content=content, is_error=result.is_error), cut
        room = room * 3 // 4
    # a limit too small for any note: what fits of the head, and nothing else
    head_end, head_tokens = prefix_within(text, max_tokens)
    omitted = round((len(text) - head_end) * head_tokens / head_end) if head_end else 0
    cut = Truncation(max_tokens, len(text), head_end, 0, head_tokens, omitted, advice="")
    return ToolResult(content=text[:head_end], is_error=result.is_error), cut


def rendered(text: str, cut: Truncation) -> str | None:
    """What the model reads of ``text`` cut as ``cut`` says (the note, the head, the marker
    where the left-out text was, the tail), or None when that is over the cut's limit."""
    tail_start = len(text) - cut.tail_chars
    head, tail = text[: cut.head_chars], text[tail_start:] if cut.tail_chars else ""
    content = f"{cut.note()}\n{head}"
    if tail:
        separator = "" if head.endswith("\n") else "\n"
        content += f"{separator}{cut.marker()}\n{tail}"
    return content if count_tokens_upto(content, cut.limit) is not None else None


def _cut(text: str, room: int, limit: int) -> Truncation:
    head_room = max(1, int(room * HEAD_SHARE))
    head_end, head_tokens = prefix_within(text, head_room)
    head_end, head_tokens = _snap_head(text, head_end, head_tokens)
    tail_start, tail_tokens = suffix_within(text, room - head_tokens)
    tail_start, tail_tokens = _snap_tail(text, tail_start, tail_tokens)
    tail_start = max(tail_start, head_end)
    if tail_start == len(text):
        tail_tokens = 0
    kept_chars = head_end + len(text) - tail_start
    kept_tokens = head_tokens + tail_tokens
    omitted_chars = tail_start - head_end
    # tokens per character of what was kept, applied to what was not
    omitted_tokens = round(omitted_chars * kept_tokens / kept_chars) if kept_chars else 0
    return Truncation(limit, len(text), head_end, len(text) - tail_start, kept_tokens, omitted_tokens)


def _snap_head(text: str, end: int, tokens: int) -> tuple[int, int]:
    if end >= len(text):
        return end, tokens
    line_end = text.rfind("\n", end - int(end * _SNAP), end)
    if line_end <= 0:
        return end, tokens
    n = count_tokens_upto(text[: line_end + 1], tokens)
    return (end, tokens) if n is None else (line_end + 1, n)


def _snap_tail(text: str, start: int, tokens: int) -> tuple[int, int]:
    if start <= 0:
        return start, tokens
    line_start = text.find("\n", start, start + int((len(text) - start) * _SNAP))
    if line_start < 0 or line_start + 1 >= len(text):
        return start, tokens
    n = count_tokens_upto(text[line_start + 1 :], tokens)
    return (start, tokens) if n is None else (line_start + 1, n)


PARTS_NOTE_TOKENS = 80
"""Room kept beside a result's text for the note that says which parts were left out."""


@attrs.frozen
class PartsDropped:
    """The images and sounds of a result left out because, with its text, they were over
    ``[agent] max_result_tokens``: how many were kept and left out, and their estimated
    tokens (``greenroom.tokens.media``)."""

    limit: int
    kept: int
    dropped: int
    kept_tokens: int
    dropped_tokens: int

    def note(self) -> str:
        """The note added to the result's text, which names every part (kept or not)."""
        what = "part" if self.dropped == 1 else "parts"
        return (
            f"[greenroom left out {self.dropped} {what} of this result (images or sounds, about "
            f"{self.dropped_tokens:,} tokens): with them it was over the limit of {self.limit:,} tokens for one "
            f"tool result. The text above names every part; {self.kept} of them reached you. To get them, "
            "ask the tool for fewer or smaller ones at once.]"
        )


def bound_parts(result: ToolResult, max_tokens: int, family: str = "") -> tuple[ToolResult, PartsDropped | None]:
    """``result`` with only the images and sounds that fit beside its text within
    ``max_tokens`` (in their order; a text over the limit leaves room for none), and what
    was left out. A result whose parts all fit is returned as it is. The source's own
    blocks are kept: ``greenroom serve`` passes them on as the server sent them."""
    if not result.parts:
        return result, None
    text_tokens = count_tokens_upto(result.content, max_tokens)
    room = -1 if text_tokens is None else max_tokens - text_tokens - PARTS_NOTE_TOKENS
    costs = [media_tokens(p, family) for p in result.parts]
    if text_tokens is not None and sum(costs) <= max_tokens - text_tokens:
        return result, None
    kept, kept_tokens = [], 0
    for part, cost in zip(result.parts, costs, strict=True):
        if kept_tokens + cost <= room:
            kept.append(part)
            kept_tokens += cost
    dropped = PartsDropped(max_tokens, len(kept), len(costs) - len(kept), kept_tokens, sum(costs) - kept_tokens)
    return attrs.evolve(result, content=f"{result.content}\n{dropped.note()}", parts=tuple(kept)), dropped


class InputTooLongError(ValueError):
    """A user input over ``[agent] max_input_tokens``: refused before any model call."""

    def __init__(self, limit: int, chars: int) -> None:
        self.limit = limit
        self.chars = chars
        super().__init__(
            f"the input is over the limit of {limit:,} tokens ({chars:,} characters); nothing was sent "
            "to the model. Send a shorter input, or raise [agent] max_input_tokens if the model takes more"
        )


def check_input(user_input: str, max_tokens: int) -> None:
    """Raise ``InputTooLongError`` when ``user_input`` counts more than ``max_tokens``."""
    if count_tokens_upto(user_input, max_tokens) is None:
        raise InputTooLongError(max_tokens, len(user_input))
