"""The simulated agent in code mode (the ``code`` arm): one script for the calls of a step.

It decides exactly as the simulated agent does (``agent``), from a view of the
conversation in the terms that agent reads: each ``run_code`` call it wrote shows as the
calls its script made, and each ToolSearch answer's signatures (code mode's form) as the
schemas they stand for. Then, instead of one call per tool, it writes one ``run_code``
script that makes the calls it decided on, each in its own ``try`` (a failed call does not
stop the others, as parallel calls would not), and returns only which were done; its
searches stay calls of their own. So the two arms differ only by code mode.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Sequence
from typing import Any

import attrs

from greenroom import Message, ModelRequest, ModelResponse, ToolCall, Usage, count_tokens
from greenroom_code import RUN_CODE
from greenroom_deferred import DISPATCH_TOOL, SEARCH_TOOL
from greenroom_lab.eval.agent import SimulatedAgent

_CALLS = re.compile(r"^const calls = (.*);$", re.M)
_CALLEE = re.compile(r'tools(?:\.([A-Za-z_$][\w$]*)|\[("(?:[^"\\]|\\.)*")\])\(')
_COMMENT = re.compile(r"/\*.*?\*/", re.S)

SCRIPT = """const calls = {calls};
const done = [], failed = [];
for (const [name, args] of calls) {{
  try {{ await tools[name](args); done.push(name); }} catch (e) {{ failed.push(name); }}
}}
return {{done, failed}};"""


class ScriptingAgent:
    """A ``greenroom.Model``: the simulated agent, writing its calls as one script."""

    def __init__(self, inner: SimulatedAgent | None = None) -> None:
        self.inner = inner or SimulatedAgent()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        if RUN_CODE not in {d.name for d in request.tools}:
            return await self.inner.complete(request)
        view = attrs.evolve(request, messages=tuple(_as_calls(request.messages)))
        response = await self.inner.complete(view)
        searches = [c for c in response.tool_calls if c.name == SEARCH_TOOL]
        planned = [_target(c) for c in response.tool_calls if c.name != SEARCH_TOOL]
        if not planned:
            return response
        code = SCRIPT.format(calls=json.dumps(planned, ensure_ascii=False, separators=(",", ":")))
        calls = (ToolCall(f"r{request.step}", RUN_CODE, {"code": code}), *searches)
        spent = count_tokens(code) + sum(count_tokens(json.dumps(c.arguments)) for c in searches)
        return ModelResponse(Message("assistant", "", tool_calls=calls), Usage(output_tokens=spent), "tool_calls")


def _target(call: ToolCall) -> list[Any]:
    """``[tool, arguments]`` of a call, looking through the dispatcher."""
    args = dict(call.arguments or {})
    if call.name == DISPATCH_TOOL:
        return [str(args.get("tool_name", "")), args.get("arguments", {})]
    return [call.name, args]


def _as_calls(messages: Sequence[Message]) -> Iterator[Message]:
    """The conversation as the simulated agent reads it: a script as its calls, and
    signatures as ``<function>`` lines."""
    for m in messages:
        if m.role == "assistant" and any(c.name == RUN_CODE for c in m.tool_calls):
            yield attrs.evolve(m, tool_calls=tuple(_expanded(m.tool_calls)))
        elif m.role == "tool" and "<signatures>" in m.content:
            yield attrs.evolve(m, content=_functions(m.content))
        else:
            yield m


def _expanded(calls: Sequence[ToolCall]) -> Iterator[ToolCall]:
    for call in calls:
        found = _CALLS.search(str((call.arguments or {}).get("code", ""))) if call.name == RUN_CODE else None
        if found is None:
            yield call
            continue
        for i, (name, args) in enumerate(json.loads(found.group(1))):
            yield ToolCall(f"{call.id}_{i}", name, args)


def _functions(text: str) -> str:
    """Each signature line of a ToolSearch answer as the ``<function>`` line it stands for."""
    lines = []
    for line in text.splitlines():
        tool = signature_tool(line)
        lines.append(f"<function>{json.dumps(tool)}</function>" if tool is not None else line)
    return "\n".join(lines)


def signature_tool(line: str) -> dict[str, Any] | None:
    """``{"name", "description", "parameters"}`` from one signature line, or None."""
    head = _CALLEE.match(line)
    if head is None:
        return None
    name = head.group(1) or json.loads(head.group(2))
    end = _closing(line, head.end() - 1)
    if end is None:
        return None
    args = _COMMENT.sub("", line[head.end() : end])
    rest = line[end + 1 :]
    description = rest.split(" — ", 1)[1] if " — " in rest else ""
    return {"name": name, "description": description, "parameters": _schema(args.strip())}


def _closing(text: str, start: int) -> int | None:
    """Where the bracket at ``start`` closes (strings and comments skipped)."""
    depth, i, pairs = 0, start, {"(": ")", "{": "}", "[": "]"}
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
        elif text.startswith("/*", i):
            i = text.find("*/", i) + 1 or len(text)
        elif ch in pairs:
            depth += 1
        elif ch in pairs.values():
            depth -= 1
            if depth == 0:
                return i
        i += 1
    return None


def _string_end(text: str, start: int) -> int:
    i = start + 1
    while i < len(text) and text[i] != '"':
        i += 2 if text[i] == "\\" else 1
    return i


def _split(text: str) -> list[str]:
    """``text`` split at the commas outside brackets and strings."""
    parts, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        if ch == '"':
            i = _string_end(text, i)
        elif ch in "([{<":
            depth += 1
        elif ch in ")]}>":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
        i += 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


def _schema(text: str) -> dict[str, Any]:
    """The JSON Schema a signature's type stands for (what instances need of it)."""
    text = text.strip()
    if text.startswith("{") and text.endswith("}"):
        properties: dict[str, Any] = {}
        required = []
        for prop in _split(text[1:-1]):
            key, _, kind = prop.partition(":")
            key = key.strip()
            optional = key.endswith("?")
            key = key.rstrip("?")
            key = json.loads(key) if key.startswith('"') else key
            properties[key] = _schema(kind)
            if not optional:
                required.append(key)
        return {"type": "object", "properties": properties, "required": required}
    branches = [b.strip() for b in _split_union(text)]
    literals = [b for b in branches if (b and b[0] in '"-0123456789') or b in ("true", "false")]
    if literals and len(literals) == len([b for b in branches if b != "..."]):
        return {"enum": [json.loads(b) for b in literals]}
    first = branches[0] if branches else ""
    if first.endswith("[]"):
        inner = first[:-2]
        return {"type": "array", "items": _schema(inner[1:-1] if inner.startswith("(") else inner)}
    simple = {"string": "string", "number": "number", "boolean": "boolean", "null": "null", "object": "object"}
    if first in simple:
        return {"type": simple[first]}
    if first.startswith("Record<"):
        return {"type": "object"}
    return {}


def _split_union(text: str) -> list[str]:
    """``text`` split at the ``|`` outside brackets and strings."""
    return _split(text.replace("|", ",")) if "|" in text and not any(c in text for c in "{(") else [text]
