"""The simulated agent: a deterministic stand-in for a model, not a model.

It reads each request as a model would (the tools it was sent, the conversation so far,
the schemas a ToolSearch answered with) and decides again from scratch at every step,
so it keeps no state between calls and two arms differ only by what greenroom showed it:

1. The task is split into parts (its sentences).
2. A part that a tool it can already see clearly fits (``matching``) is done with that
   tool, called directly with arguments that satisfy its schema (``instances``).
3. Every other part is searched for with the part's text, when a search tool is there;
   of the hits it takes the one that fits the part best (ties go to the higher-ranked),
   and calls it: directly if it is in the tools array, else through the dispatcher. A
   part whose best tool an earlier part already took is taken as covered by it.
4. Without a search tool (every tool eager) it takes the best-fitting tool it sees.
5. It answers when every part has had its call, or nothing is left to try.

It does not read gold labels, retry failed calls, load groups or write keyword
queries; it never makes a typo either. Its success rate is a property of what it was
shown, not a prediction of any model's.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from greenroom import Message, ModelRequest, ModelResponse, ToolCall, ToolDescriptor, Usage, count_tokens
from greenroom_deferred import DISPATCH_TOOL, OWN_TOOLS, SEARCH_TOOL
from greenroom_lab.eval.instances import arguments_for
from greenroom_lab.eval.matching import Known, best, choose, split_parts

ANSWER = "Done: every part of the task has been handled."
NOTHING_LEFT = "I handled what I could find tools for."

_FUNCTION = re.compile(r"<function>(.*?)</function>")


def known(descriptor: ToolDescriptor) -> Known:
    return Known(descriptor.name, descriptor.description, descriptor.parameters)


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


@attrs.frozen
class History:
    """What the conversation so far says: what was searched, found and called."""

    searched: Mapping[str, list[Known]]
    called: frozenset[str]

    @classmethod
    def read(cls, messages: Sequence[Message]) -> History:
        search_queries: dict[str, str] = {}
        searched: dict[str, list[Known]] = {}
        called: set[str] = set()
        for m in messages:
            for call in m.tool_calls:
                args = call.arguments or {}
                if call.name == SEARCH_TOOL:
                    search_queries[call.id] = str(args.get("query", ""))
                elif call.name == DISPATCH_TOOL:
                    called.add(str(args.get("tool_name", "")))
                else:
                    called.add(call.name)
            if m.role == "tool" and m.tool_call_id in search_queries:
                searched[search_queries[m.tool_call_id]] = [] if m.is_error else found_tools(m.content)
        return cls(searched, frozenset(called))


class SimulatedAgent:
    """A ``greenroom.Model`` that works through a task as described in the module."""

    def __init__(self) -> None:
        self._arguments: dict[str, dict[str, Any]] = {}

    def arguments(self, tool: Known) -> dict[str, Any]:
        hit = self._arguments.get(tool.name)
        if hit is None:
            if len(self._arguments) > 65536:  # bounded: a catalog's worth of tools
                self._arguments.clear()
            hit = self._arguments[tool.name] = arguments_for(tool.parameters)
        return hit

    async def complete(self, request: ModelRequest) -> ModelResponse:
        task = next((m.content for m in request.messages if m.role == "user"), "")
        names = {d.name for d in request.tools}
        visible = [known(d) for d in request.tools if d.name not in OWN_TOOLS]
        history = History.read(request.messages)
        can_search = SEARCH_TOOL in names
        picks: list[Known] = []
        searches: list[str] = []
        taken: set[str] = set()
        for part in split_parts(task):
            pick: Known | None
            if part in history.searched:
                pick = choose(part, history.searched[part])
            else:
                pick = best(part, visible, clear_only=can_search)
                if pick is None and can_search:
                    searches.append(part)
                    continue
            # a part whose tool another part already took is about the same thing (an
            # opening sentence that the next one spells out): covered, no second call
            if pick is not None and pick.name not in taken:
                taken.add(pick.name)
                if pick.name not in history.called:
                    picks.append(pick)
        calls = [self._call(request.step, i, t, names) for i, t in enumerate(picks)]
        calls += [ToolCall(f"s{request.step}_{i}", SEARCH_TOOL, {"query": q}) for i, q in enumerate(searches)]
        if not calls:
            text = ANSWER if not history.searched or taken else NOTHING_LEFT
            return ModelResponse(Message("assistant", text), Usage(output_tokens=count_tokens(text)), "stop")
        out = tuple(calls)
        spent = count_tokens(json.dumps([[c.name, c.arguments] for c in out], sort_keys=True))
        return ModelResponse(Message("assistant", "", tool_calls=out), Usage(output_tokens=spent), "tool_calls")

    def _call(self, step: int, i: int, tool: Known, names: set[str]) -> ToolCall:
        args = self.arguments(tool)
        if tool.name in names or DISPATCH_TOOL not in names:
            return ToolCall(f"c{step}_{i}", tool.name, args)
        return ToolCall(f"c{step}_{i}", DISPATCH_TOOL, {"tool_name": tool.name, "arguments": args})
