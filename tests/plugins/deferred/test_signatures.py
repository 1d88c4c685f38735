"""When a plugin runs the model's scripts (``Scripting``), ToolSearch answers with the
signature a script calls (one TypeScript-like line per tool) and the listing says so in one
line; without one, nothing changes. The signatures themselves: types, optional properties,
literals, nesting, odd names, and a bound whatever the schema."""

from __future__ import annotations

import json
from typing import Any

import anyio
import pytest

from greenroom import Plugin, RunContext, Scripting, ToolDescriptor, hookimpl, tool
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.signatures import MAX_LINE, signature


class Scripts(Plugin):
    """Says that the model writes scripts, as code mode does (through the core state type)."""

    name = "scripts"

    @hookimpl
    def greenroom_run_start(self, ctx: RunContext) -> None:
        ctx.state[Scripting].tool = "run_script"


def weather_tools() -> list[Any]:
    out = []
    for name in ("weather_get", "weather_list", "calendar_get", "email_send", "billing_get", "slack_post"):

        def impl(**kw: Any) -> str:
            return json.dumps(kw)

        t = tool(impl, name=name, description=f"{name.replace('_', ' ').capitalize()} for the account. More text.")
        t._descriptor = ToolDescriptor(
            name,
            t.descriptor.description,
            {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "The record id."},
                    "unit": {"enum": ["c", "f"]},
                },
                "required": ["id"],
            },
        )
        out.append(t)
    return out


def search_answer(make_runtime, *plugins: Plugin, strategy: str = "dispatch") -> tuple[str, str]:
    turns = [{"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "weather get"}}]}, {"text": "ok"}]
    deferred = DeferredToolsPlugin(DeferredConfig(enabled=True, strategy=strategy))  # type: ignore[arg-type]
    rt = make_runtime(turns, tools=weather_tools(), plugins=[*plugins, deferred])
    session = rt.session()
    anyio.run(session.run, "x")
    answer = next(m.content for m in session.messages if m.role == "tool")
    return answer, rt.model.requests[0].system_text


@pytest.mark.parametrize("strategy", ["dispatch", "inject"])
def test_with_scripts_the_search_answers_with_signatures_and_the_listing_says_so(make_runtime, strategy) -> None:
    answer, system = search_answer(make_runtime, Scripts(), strategy=strategy)
    lines = answer.splitlines()
    assert lines[0] == "<signatures>"
    assert (
        lines[1]
        == 'tools.weather_get({id: string /* The record id. */, unit?: "c" | "f"}) — Weather get for the account.'
    )
    assert "<function>" not in answer
    assert lines[-1] == "In run_script, call them as shown: await tools.NAME(args)."
    (line,) = [x for x in system.splitlines() if "run_script" in x]
    assert (
        line == "In run_script scripts, call any tool by name: `await tools.NAME(args)`; ToolSearch gives signatures."
    )


def test_without_scripts_nothing_changes(make_runtime) -> None:
    answer, system = search_answer(make_runtime)
    assert answer.startswith("<functions>\n<function>{") and "<signatures>" not in answer
    assert "scripts" not in system and "await tools" not in system


def d(parameters: Any, name: str = "t", description: str = "Does it. And more.") -> ToolDescriptor:
    return ToolDescriptor(name, description, parameters)


def test_signatures_say_what_a_call_needs() -> None:
    schema = {
        "type": "object",
        "properties": {
            "q": {"type": "string"},
            "n": {"type": "integer"},
            "tags": {"type": "array", "items": {"type": "string"}},
            "mode": {"const": "fast"},
            "when": {"type": ["string", "null"]},
            "any": {"anyOf": [{"type": "number"}, {"type": "boolean"}]},
            "nested": {"type": "object", "properties": {"a": {"type": "boolean"}}, "required": ["a"]},
            "deep": {
                "type": "object",
                "properties": {"b": {"type": "object", "properties": {"c": {"type": "object", "properties": {}}}}},
            },
            "map": {"type": "object", "additionalProperties": {"type": "number"}},
            "odd-key": {"$ref": "#/defs/x"},
        },
        "required": ["q"],
    }
    assert signature(d(schema)) == (
        'tools.t({q: string, n?: number, tags?: string[], mode?: "fast", when?: string | null, any?: number | '
        'boolean, nested?: {a: boolean}, deep?: {b?: {c?: object}}, map?: Record<string, number>, "odd-key"?: unknown})'
        " — Does it."
    )
    assert signature(d({"type": "object"}, name="get-user")) == 'tools["get-user"]({}) — Does it.'
    assert signature(d({"enum": list(range(20))}, description="")) == "tools.t({})"


def test_a_signature_is_bounded_whatever_the_schema() -> None:
    huge = {
        "type": "object",
        "properties": {f"p{i}": {"type": "string", "description": "x" * 200} for i in range(200)},
        "required": [f"p{i}" for i in range(200)],
    }
    line = signature(d(huge))
    head = line.split(" — ")[0]
    assert len(head) <= MAX_LINE and head.endswith(" ...)") and "/*" not in head
    few = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "x" * 200} for i in range(30)}}
    assert "/*" not in signature(d(few))  # no room for the comments: the properties come first
