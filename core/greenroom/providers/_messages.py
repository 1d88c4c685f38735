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


# ---------------------------------------------------------------------------- tool search

CLIENT_SEARCH_TOOL = "tool_search"
"""The name of the call a provider makes of a search its model runs on the client side
(OpenAI's ``tool_search`` with ``execution: "client"``; a search tool answered with
Anthropic's ``tool_reference`` blocks). The provider offers the search tool itself (with
``SEARCH_DESCRIPTION`` and ``SEARCH_PARAMETERS``) when the request defers tools, and
maps the model's search to a ``ToolCall`` of this name with those parameters; a plugin
that defers tools resolves it to its own search tool (``greenroom_resolve_tool_call``),
which the runtime then runs like any other. The result comes back as a tool message
whose content names what was found (``found_tools``), which the provider renders in its
API's form, so that the API loads those tools."""

SEARCH_DESCRIPTION = (
    "Search the deferred tools and load the best matches, whose definitions then arrive in "
    "the result. Query: keywords ('create issue'), '+word rest' to require a word, or "
    "'select:name_a,name_b' for exact names."
)
"""What a provider's client-executed search tool tells the model."""

SEARCH_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Keywords, +required words, or select:a,b."},
        "max_results": {"type": "integer", "minimum": 1, "maximum": 50, "description": "How many tools to load."},
    },
    "required": ["query"],
    "additionalProperties": False,
}
"""The parameters of a provider's client-executed search tool."""


def found_tools(m: Message) -> tuple[str, ...]:
    """The names of the tools a search result found, in its order; () for an error or a
    result that found nothing.

    A search answers with a ``<functions>`` block, one ``<function>{json}</function>``
    line per tool found; the names are read from the JSON. The
    caller knows which results answer searches (the calls it mapped)."""
    if m.role != "tool" or m.is_error or not m.content.startswith("<functions>"):
        return ()
    names: list[str] = []
    for line in m.content.splitlines()[1:]:
        if line == "</functions>":
            break
        if not (line.startswith("<function>") and line.endswith("</function>")):
            continue
        try:
            name = json.loads(line[len("<function>") : -len("</function>")]).get("name")
        except (ValueError, AttributeError):
            continue
        if isinstance(name, str) and name not in names:
            names.append(name)
    return tuple(names)
