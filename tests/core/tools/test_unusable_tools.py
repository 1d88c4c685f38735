"""A tool whose parameter schema is invalid is found when it loads, reported by name with
its problem, kept out of what the model sees, and answered with that problem when
called; the run goes on and the other tools work."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from greenroom import events as ev
from greenroom.cli import app
from greenroom.models import Message, ToolCall
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime
from greenroom.tools import FunctionTool, ToolDescriptor, tool
from greenroom.tools.groups import ToolGroup
from greenroom.tools.schema.problem import SchemaFault
from greenroom.tools.toolset import ToolSet, UnusableToolError, validation_problems

BROKEN = {
    "strange_type": {"type": "object", "properties": {"q": {"type": "strng"}}},
    "bad_regex": {"type": "object", "properties": {"q": {"type": "string", "pattern": "[a-"}}},
    "dangling_ref": {"type": "object", "properties": {"q": {"$ref": "#/$defs/Query"}}},
    # what an MCP server may list: providers refuse a request that carries it
    "string_params": {"type": "string"},
}
FAULTS = {
    "strange_type": "unknown_type",
    "bad_regex": "bad_pattern",
    "dangling_ref": "dangling_ref",
    "string_params": "not_an_object",
}


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


def bad_tool(name: str, schema: Any) -> FunctionTool:
    """A Python tool given an invalid schema explicitly."""
    return FunctionTool(lambda **kw: "ran", ToolDescriptor(name, f"The {name} tool.", schema))


def runtime(turns: list[Any], tools: list[Any], groups: Sequence[ToolGroup] = ()) -> tuple[Runtime, list[ev.Event]]:
    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    rt = Runtime(model=ScriptedModel(turns), tools=tools, host=make_plugin_host(records=[]), events=bus, groups=groups)
    return rt, seen


def results(rt_session: Any) -> dict[str, Message]:
    return {m.name: m for m in rt_session.messages if m.role == "tool"}


def test_a_catalog_with_each_kind_of_broken_schema_runs_through_the_cli(tmp_path: Path) -> None:
    catalog = tmp_path / "catalog.jsonl"
    lines = [{"name": n, "description": f"The {n} tool.", "parameters": s} for n, s in BROKEN.items()]
    lines.append({"name": "fine", "description": "A fine tool.", "parameters": {"type": "object"}})
    catalog.write_text("".join(json.dumps(line) + "\n" for line in lines))
    (tmp_path / "tools.py").write_text(
        "from greenroom import tool\n\n"
        "@tool\ndef ping() -> str:\n    '''Answer pong.'''\n    return 'pong'\n\n"
        "TOOLS = [ping]\n"
    )
    calls = [{"name": n, "arguments": {"q": "x"}} for n in BROKEN] + [{"name": "ping", "arguments": {}}]
    (tmp_path / "script.jsonl").write_text(
        json.dumps({"tool_calls": calls}) + "\n" + json.dumps({"text": "done"}) + "\n"
    )
    cfg = tmp_path / "agent.toml"
    cfg.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\n[tools]\npython = ["tools.py:TOOLS"]\ncatalogs = ["catalog.jsonl"]\n'
    )
    trace, session = tmp_path / "trace.jsonl", tmp_path / "session.json"
    result = CliRunner().invoke(app, ["run", str(cfg), "go", "--trace", str(trace), "--session", str(session), "-q"])
    assert result.exit_code == 0, result.output
    assert result.output.strip().endswith("done")

    records = [json.loads(line) for line in trace.read_text().splitlines()]
    unusable = {r["tool"]: r for r in records if r["kind"] == "tool_unusable"}
    assert {n: r["fault"] for n, r in unusable.items()} == FAULTS
    assert unusable["strange_type"]["where"] == "#/properties/q/type"
    assert "'[a-' is not a valid regular expression" in unusable["bad_regex"]["problem"]
    assert "'#/$defs/Query' points to nothing" in unusable["dangling_ref"]["problem"]
    (first_request,) = [r for r in records if r["kind"] == "request"][:1]
    assert "ping" in first_request["tool_names"] and not set(BROKEN) & set(first_request["tool_names"])
    outcome = {r["tool"]: r for r in records if r["kind"] == "tool_result"}
    for name in BROKEN:
        assert outcome[name]["is_error"]
        assert f"tool {name!r} cannot be used: its parameter schema is invalid" in outcome[name]["content"]
        assert unusable[name]["problem"] in outcome[name]["content"]
    assert outcome["ping"] == {**outcome["ping"], "is_error": False, "content": "pong"}
    assert records[-1]["kind"] == "run_end" and records[-1]["stop_reason"] == "final"
    saved = json.loads(session.read_text())
    assert [m["content"] for m in saved["messages"] if m["role"] == "tool"][-1] == "pong"


@pytest.mark.anyio
@pytest.mark.parametrize("name", sorted(BROKEN))
async def test_a_python_tool_given_a_bad_schema_is_reported_at_build_and_answers_its_problem(name: str) -> None:
    turns = [{"tool_calls": [{"name": name, "arguments": {"q": "x"}}, {"name": "ping"}]}, {"text": "done"}]
    rt, seen = runtime(turns, [bad_tool(name, BROKEN[name]), ping])
    (warned,) = [e for e in seen if isinstance(e, ev.ToolUnusable)]  # at build, before any run
    assert (warned.tool, warned.fault) == (name, FAULTS[name])
    assert set(rt.tools.unusable) == {name} and name in rt.tools  # kept by name, for its calls
    assert [d.name for d in rt.tools.descriptors()] == ["ping"]

    s = rt.session()
    outcome = await s.run("go")
    assert outcome.stop_reason == "final" and outcome.text == "done"
    got = results(s)
    assert got[name].is_error and str(rt.tools.problem(name)) in got[name].content
    assert not got["ping"].is_error and got["ping"].content == "pong"
    assert [t.name for t in rt.model.requests[0].tools] == ["ping"]


@pytest.mark.anyio
async def test_a_non_object_schema_is_unusable() -> None:
    rt, seen = runtime([{"tool_calls": [{"name": "listy", "arguments": {}}]}, {"text": "ok"}], [bad_tool("listy", [1])])
    assert [(e.tool, e.fault) for e in seen if isinstance(e, ev.ToolUnusable)] == [("listy", "not_a_schema")]
    s = rt.session()
    assert (await s.run("go")).stop_reason == "final"
    assert "must be a JSON object, not list" in results(s)["listy"].content


@pytest.mark.anyio
async def test_what_only_the_meta_schema_finds_makes_the_tool_unusable_at_load() -> None:
    odd = bad_tool("odd", {"type": "object", "properties": {"tags": {"type": "array", "uniqueItems": "yes"}}})
    turns = [
        {"tool_calls": [{"name": "odd", "arguments": {"tags": []}}]},
        {"tool_calls": [{"name": "ping"}]},
        {"text": "ok"},
    ]
    rt, seen = runtime(turns, [odd, ping])
    (warned,) = [e for e in seen if isinstance(e, ev.ToolUnusable)]  # found when the tools load
    assert (warned.tool, warned.fault, warned.where) == ("odd", "meta_schema", "#/properties/tags/uniqueItems")
    s = rt.session()
    assert (await s.run("go")).stop_reason == "final"
    assert "cannot be used" in results(s)["odd"].content
    sent = [[t.name for t in r.tools] for r in rt.model.requests]
    assert sent == [["ping"], ["ping"], ["ping"]]  # never sent to the model


def test_validation_that_raises_marks_the_tool_unusable() -> None:
    class Raising:
        def iter_errors(self, instance: Any) -> Any:
            raise TypeError("'<' not supported between instances of 'int' and 'str'")

    reported: list[tuple[str, SchemaFault]] = []
    tools = ToolSet([ping], on_unusable=lambda name, problem: reported.append((name, problem.fault)))
    tools._validators["ping"] = Raising()  # type: ignore[assignment]
    with pytest.raises(UnusableToolError, match="validating arguments with it failed: TypeError"):
        validation_problems(tools, "ping", {})
    assert reported == [("ping", SchemaFault.UNAPPLICABLE)]
    assert tools.descriptors() == [] and "ping" in tools


@pytest.mark.anyio
async def test_a_group_tool_is_checked_from_its_catalog_and_again_when_it_loads() -> None:
    good = {"type": "object", "properties": {"q": {"type": "string"}}}

    async def loader() -> list[Any]:
        return [bad_tool("listed_fine", BROKEN["bad_regex"]), bad_tool("listed_bad", good)]

    known = [
        ToolDescriptor("listed_fine", "Fine in the catalog.", good),
        ToolDescriptor("listed_bad", "Bad.", BROKEN["dangling_ref"]),
    ]
    group = ToolGroup("g", "G", "A group.", loader, known=known)
    turns = [{"tool_calls": [{"name": "listed_bad", "arguments": {"q": "x"}}]}, {"text": "ok"}]
    rt, seen = runtime(turns, [ping], groups=[group])
    assert [(e.tool, e.fault) for e in seen if isinstance(e, ev.ToolUnusable)] == [("listed_bad", "dangling_ref")]
    s = rt.session()
    await s.run("go")  # the catalog's problem answers a call before the group loads
    assert "points to nothing" in results(s)["listed_bad"].content

    await rt.load_group("g")  # what the group really holds decides from now on
    assert [(e.tool, e.fault) for e in seen if isinstance(e, ev.ToolUnusable)][1:] == [("listed_fine", "bad_pattern")]
    assert set(rt.tools.unusable) == {"listed_fine"}
    assert "listed_bad" in [d.name for d in rt.tools.descriptors()]


@pytest.mark.anyio
async def test_a_direct_call_with_arguments_given_as_objects_is_checked_first() -> None:
    # arguments that would be invalid do not matter: the schema's problem is what the model reads
    turn = Message("assistant", "", tool_calls=(ToolCall("c1", "bad_regex", {"q": 5}),))
    rt, _ = runtime([turn, {"text": "ok"}], [bad_tool("bad_regex", BROKEN["bad_regex"])])
    s = rt.session()
    await s.run("go")
    assert results(s)["bad_regex"].content.startswith("tool 'bad_regex' cannot be used")
