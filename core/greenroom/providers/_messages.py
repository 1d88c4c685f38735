"""Messages as providers need them: system sections in order, every tool call answered,
tool-call arguments parsed, text that UTF-8 can encode."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom._support.arguments import json_text, nesting_exceeds, parse_json_object
from greenroom.models import Message, SystemSection


def ordered_system(sections: Sequence[SystemSection]) -> tuple[list[SystemSection], list[SystemSection]]:
    """Stable sections, then the others, both in their given order, empty ones dropped.

    Stable sections go first so that the cacheable prefix ends before anything that
    changes from step to step.
    """
    stable = [s for s in sections if s.stable and s.text]
    volatile = [s for s in sections if not s.stable and s.text]
    return stable, volatile


UNANSWERED_CALL = "the call did not complete: the run stopped before it returned a result"
"""The result sent for a tool call that has none in the history (a run cancelled while
its tools ran leaves the assistant's calls unanswered)."""


def paired_messages(messages: Sequence[Message]) -> list[Message]:
    """The history with every tool call answered exactly once, right after its turn.

    All three APIs reject a request in which an assistant's tool call has no result
    before the next user or assistant turn, or a result answers no call of the turn
    before it. A run cancelled while its tools ran leaves such calls in the session, and
    every later run on it would fail; here each unanswered call gets an error result
    and a result that answers nothing is dropped.
    """
    out: list[Message] = []
    pending: dict[str, None] = {}  # ids of the last assistant turn's unanswered calls, in order

    def answer_pending() -> None:
        for call_id in pending:
            out.append(Message(role="tool", content=UNANSWERED_CALL, tool_call_id=call_id, is_error=True))
        pending.clear()

    for m in messages:
        if m.role == "tool":
            if m.tool_call_id in pending:
                del pending[m.tool_call_id]
                out.append(m)
            continue
        answer_pending()
        out.append(m)
        if m.role == "assistant":
            pending.update((c.id, None) for c in m.tool_calls)
    answer_pending()
    return out


def parse_arguments(raw: Any) -> tuple[dict[str, Any] | None, str]:
    """A model's tool-call arguments -> (object or None when malformed, the raw text).

    The raw text is kept so the next request replays exactly what the model wrote, and
    so the runtime's error result can quote it. Arguments nested deeper than
    ``greenroom._support.arguments.MAX_ARGUMENT_DEPTH`` come back as None with their text.
    """
    if isinstance(raw, Mapping):  # some compatible servers send an object, not a string
        if nesting_exceeds(raw):
            return None, json_text(raw)
        return dict(raw), json.dumps(raw, ensure_ascii=False)
    text = "" if raw is None else str(raw)
    if not text.strip():
        return {}, text  # vLLM / Ollama send "" for tools without parameters
    # arguments nested too deeply stay text: parsing them would recurse out of the stack
    return parse_json_object(text), text


def without_lone_surrogates(value: Any) -> Any:
    """``value`` (JSON data) with every lone surrogate in its strings and keys replaced by
    U+FFFD (a split pair joined), so that it encodes as UTF-8: text from outside (a file
    name read with ``surrogateescape``, a ``"\\ud800"`` escape in a server's JSON) must
    never fail a request. A copy; valid text is returned as it is."""
    if isinstance(value, str):
        if value.isascii():
            return value
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
        return value
    if isinstance(value, Mapping):
        return {without_lone_surrogates(k): without_lone_surrogates(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [without_lone_surrogates(v) for v in value]
    return value
