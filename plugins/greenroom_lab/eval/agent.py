"""The simulated agent: a deterministic stand-in for a model, not a model.

It reads each request as a model would (the system prompt and the tools it lists, the
tools array, the conversation so far and the schemas its searches answered with) and
decides again from scratch at every step, so it keeps no state between calls and two
arms differ only by what greenroom showed it. It works on the latest request of the
conversation (the last user message):

1. The request is split into parts (its sentences).
2. A part that a tool it has a schema for (in the tools array, or from a search answer
   earlier in the session) clearly fits (``matching``: by its name or its description)
   is done with that tool, called with arguments that satisfy its schema
   (``instances``): directly if it is in the tools array, else through the dispatcher.
3. A part that a tool the system prompt lists clearly fits is asked for by name
   (``ToolSearch "select:NAME"``, one search for all such names of a step).
4. Every other part is searched for with the part's text, when a search tool is there;
   of the hits it takes the one that fits the part best (ties go to the higher-ranked)
   and calls it. A part whose best tool an earlier part already took is covered by it.
5. Without a search tool (every tool eager) it takes the best-fitting tool it sees.
6. It answers when every part has had its call, or nothing is left to try.

It is made with nothing (``SimulatedAgent()``) and given nothing but requests: it
cannot read gold labels or checkers. It does not retry failed calls, load groups or
write keyword queries; it never makes a typo either. Its success rate is a property of
what it was shown, not a prediction of any model's.
"""

from __future__ import annotations

import json
from typing import Any

from greenroom import Message, ModelRequest, ModelResponse, ToolCall, ToolDescriptor, Usage, count_tokens
from greenroom_deferred import DISPATCH_TOOL, OWN_TOOLS, SEARCH_TOOL
from greenroom_lab.eval.instances import arguments_for
from greenroom_lab.eval.matching import Known, best, choose, split_parts
from greenroom_lab.eval.reading import SELECT, Conversation, listed_tools

ANSWER = "Done: every part of the task has been handled."
NOTHING_LEFT = "I handled what I could find tools for."


def known(descriptor: ToolDescriptor) -> Known:
    return Known(descriptor.name, descriptor.description, descriptor.parameters)


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
        conv = Conversation.read(request.messages)
        names = {d.name for d in request.tools}
        can_search = SEARCH_TOOL in names
        # what it has schemas for: the tools array (less what a hosted search keeps back),
        # then what searches in this session answered with
        hidden = OWN_TOOLS | request.deferred
        schemas = {d.name: known(d) for d in request.tools if d.name not in hidden}
        for name, tool in conv.schemas.items():
            schemas.setdefault(name, tool)
        listed = listed_tools(request.system_text) if can_search else ()
        picks: list[Known] = []
        searches: list[str] = []
        selects: list[str] = []
        taken: set[str] = set()
        for part in split_parts(conv.request):
            pick: Known | None
            if part in conv.searched:
                pick = choose(part, conv.searched[part])
            else:
                pick = best(part, schemas.values(), clear_only=can_search)
                if pick is None and can_search:
                    named = best(part, listed, clear_only=True)
                    if named is not None and named.name in schemas:
                        pick = schemas[named.name]  # its schema came: the part is done with it
                    elif named is not None and named.name not in conv.selected:
                        if named.name not in selects:
                            selects.append(named.name)
                        continue
                    else:
                        searches.append(part)
                        continue
            # a part whose tool another part already took is about the same thing (an
            # opening sentence that the next one spells out): covered, no second call
            if pick is not None and pick.name not in taken:
                taken.add(pick.name)
                if pick.name not in conv.called:
                    picks.append(pick)
        calls = [self._call(request.step, i, t, names) for i, t in enumerate(picks)]
        if selects:
            searches.insert(0, SELECT + ",".join(selects))
        calls += [ToolCall(f"s{request.step}_{i}", SEARCH_TOOL, {"query": q}) for i, q in enumerate(searches)]
        if not calls:
            text = ANSWER if not conv.searched or taken else NOTHING_LEFT
            return ModelResponse(Message("assistant", text), Usage(output_tokens=count_tokens(text)), "stop")
        out = tuple(calls)
        spent = count_tokens(json.dumps([[c.name, c.arguments] for c in out], sort_keys=True))
        return ModelResponse(Message("assistant", "", tool_calls=out), Usage(output_tokens=spent), "tool_calls")

    def _call(self, step: int, i: int, tool: Known, names: set[str]) -> ToolCall:
        args = self.arguments(tool)
        if tool.name in names or DISPATCH_TOOL not in names:
            return ToolCall(f"c{step}_{i}", tool.name, args)
        return ToolCall(f"c{step}_{i}", DISPATCH_TOOL, {"tool_name": tool.name, "arguments": args})
