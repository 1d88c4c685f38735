"""What the simulated agent reads in a request, as a model reads it: the tools listed in
the system prompt, the schemas search answers gave, and what the conversation so far
says about the request it is working on.

Nothing here knows a task: a request is all there is (the system prompt, the tools
array and the messages), so the agent cannot learn what the evaluation counts as done.

A tool is *listed* when the system prompt names it on a line of the forms greenroom's
listings and search answers use, or any prompt would:

- ``NAME - description`` (one word, a spaced hyphen, its description);
- a comma-separated list of one-word names on a line of its own (after an optional
  ``label:``, before an optional ``... (+N more)``);
- inside ``<available-deferred-tools>``, a space-separated list of names (the ``names``
  style), after an optional ``group:``.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Mapping, Sequence

import attrs

from greenroom import Message
from greenroom_deferred import DISPATCH_TOOL, SEARCH_TOOL
from greenroom_lab.eval.matching import Known

SELECT = "select:"
"""The ToolSearch query that asks for named tools' schemas."""

MAX_LISTED = 20_000
"""Listed tools read at most: a system prompt is bounded, and so is what is kept of it."""

_FUNCTION = re.compile(r"<function>(.*?)</function>")
_NAME = r"[A-Za-z_][\w.\-]*"
_DESCRIBED = re.compile(rf"^\s*({_NAME}) - (.+)$")
_MORE = re.compile(r",?\s*\.\.\.\s*(\(\+\d+ more\))?\s*$")
_LABEL = re.compile(r"^\s*(?:[\w .\-]+:\s+)?")
_ONE_NAME = re.compile(rf"^{_NAME}$")


def found_tools(text: str) -> list[Known]:
    """The schemas a ToolSearch answer holds, in its order (its ``<function>`` lines:
    JSON objects with name, description and parameters)."""
    out: list[Known] = []
    for raw in _FUNCTION.findall(text):
        try:
            data = json.loads(raw)
        except json.JSONDecodeError:
            continue
        if isinstance(data, dict) and isinstance(data.get("name"), str):
            out.append(Known(data["name"], str(data.get("description") or ""), data.get("parameters")))
    return out


def _names(line: str, separator: str | None) -> list[str]:
    body = _MORE.sub("", _LABEL.sub("", line, count=1)).strip()
    items = [n.strip() for n in (body.split(separator) if separator else body.split())]
    return items if items and all(_ONE_NAME.match(n) for n in items) else []


@functools.lru_cache(maxsize=16)  # a system prompt is the same from step to step
def listed_tools(system: str) -> tuple[Known, ...]:
    """The tools the system prompt names (see the module), each once, in its order; a
    name without a description has an empty one."""
    out: dict[str, Known] = {}
    inside = False
    for line in system.splitlines():
        if len(out) >= MAX_LISTED:
            break
        tag = line.strip()
        if tag in ("<available-deferred-tools>", "</available-deferred-tools>"):
            inside = tag.startswith("<a")
            continue
        described = _DESCRIBED.match(line)
        if described:
            out.setdefault(described[1], Known(described[1], described[2].strip(), None))
            continue
        names = _names(line, ",") if "," in line else (_names(line, None) if inside else [])
        for name in names:
            out.setdefault(name, Known(name, "", None))
    return tuple(out.values())


@attrs.frozen
class Conversation:
    """What the messages say: the request being worked on (the last user message), every
    schema a search answered with in the session, and, since that request, the searches
    made (query -> hits), the names asked for with ``select:``, and the tools called."""

    request: str
    schemas: Mapping[str, Known]
    searched: Mapping[str, list[Known]]
    selected: frozenset[str]
    called: frozenset[str]

    @classmethod
    def read(cls, messages: Sequence[Message]) -> Conversation:
        last = max((i for i, m in enumerate(messages) if m.role == "user"), default=-1)
        queries: dict[str, str] = {}
        schemas: dict[str, Known] = {}
        searched: dict[str, list[Known]] = {}
        selected: set[str] = set()
        called: set[str] = set()
        for i, m in enumerate(messages):
            current = i > last
            for call in m.tool_calls:
                args = call.arguments or {}
                if call.name == SEARCH_TOOL:
                    query = str(args.get("query", ""))
                    queries[call.id] = query
                    if current and query.startswith(SELECT):
                        selected.update(n.strip() for n in query[len(SELECT) :].split(","))
                elif current:
                    called.add(str(args.get("tool_name", "")) if call.name == DISPATCH_TOOL else call.name)
            if m.role == "tool" and m.tool_call_id in queries:
                hits = [] if m.is_error else found_tools(m.content)
                schemas.update((k.name, k) for k in hits)
                if current:
                    searched[queries[m.tool_call_id]] = hits
        request = messages[last].content if last >= 0 else ""
        return cls(request, schemas, searched, frozenset(selected), frozenset(called))
