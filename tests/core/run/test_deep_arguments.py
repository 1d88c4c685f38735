"""Arguments nested 1,000 levels deep never end a run: the call gets an error result that
says so, and the trace and the saved session hold the call as text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from greenroom import events as ev
from greenroom._support.arguments import MAX_ARGUMENT_DEPTH
from greenroom.models import Message, ToolCall
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel, ScriptError
from greenroom.run.runtime import Runtime
from greenroom.tools import tool

pytestmark = pytest.mark.anyio

LEVELS = 1_000


@tool
def store(data: dict) -> str:  # type: ignore[type-arg]
    """Store a document."""
    return "stored"


def deep_dict(levels: int = LEVELS) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def deep_text(levels: int = LEVELS) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


async def run_traced(tmp_path: Path, turns: list[Any]) -> tuple[list[Message], list[dict[str, Any]], Path]:
    trace = tmp_path / "trace.jsonl"
    writer = ev.TraceWriter(trace)
    bus = ev.EventBus()
    bus.subscribe(writer)
    rt = Runtime(model=ScriptedModel(turns), tools=[store], host=make_plugin_host(records=[]), events=bus)
    s = rt.session()
    try:
        outcome = await s.run("store this")
    finally:
        writer.close()
    assert outcome.stop_reason == "final" and outcome.text == "done"
    saved = s.save(tmp_path / "session.json")
    assert rt.load_session(saved).messages == s.messages  # what was saved reads back
    return s.messages, [json.loads(line) for line in trace.read_text().splitlines()], saved


def too_deep_result(messages: list[Message]) -> Message:
    (result,) = [m for m in messages if m.role == "tool"]
    assert result.is_error
    assert f"nested too deeply: more than {MAX_ARGUMENT_DEPTH} levels" in result.content
    return result


@pytest.mark.parametrize(
    "arguments", [{"data": deep_dict()}, deep_dict(), deep_text()], ids=["in-a-key", "object", "text"]
)
async def test_a_direct_call_nested_too_deeply_gets_an_error_and_the_run_goes_on(
    tmp_path: Path, arguments: Any
) -> None:
    call = {"name": "store", "arguments": arguments}
    messages, records, _ = await run_traced(tmp_path, [{"tool_calls": [call]}, {"text": "done"}])
    too_deep_result(messages)
    assert records[-1]["kind"] == "run_end" and records[-1]["stop_reason"] == "final"
    (response,) = [r for r in records if r["kind"] == "response" and r["tool_calls"]]
    assert isinstance(response["tool_calls"][0]["arguments"], str)  # recorded as the text, whole
    (result,) = [r for r in records if r["kind"] == "tool_result"]
    assert result["arguments"] is None and result["is_error"]


async def test_a_model_object_built_in_python_is_bounded_too(tmp_path: Path) -> None:
    # a model adapter may hand over any Python object, even one inside itself (not JSON at all)
    loop: dict[str, Any] = {}
    loop["again"] = loop
    turns = [
        Message("assistant", "", tool_calls=(ToolCall("c1", "store", {"data": deep_dict()}),)),
        Message("assistant", "", tool_calls=(ToolCall("c2", "store", {"data": loop}),)),
        Message("assistant", "", tool_calls=(ToolCall("c3", "store", {"data": {"ok": True}}),)),
        {"text": "done"},
    ]
    messages, records, saved = await run_traced(tmp_path, turns)
    results = [m for m in messages if m.role == "tool"]
    assert "nested too deeply" in results[0].content
    assert results[1].is_error and "are not a JSON object" in results[1].content
    assert results[2].content == "stored"
    calls = [c for m in json.loads(saved.read_text())["messages"] for c in m.get("tool_calls") or ()]
    assert [c["arguments"] for c in calls[:2]] == [None, None]
    assert calls[1]["raw_arguments"] == '{"data":{"again":"<cycle>"}}'
    assert [r["kind"] for r in records][-1] == "run_end"


async def test_arguments_just_within_the_bound_are_validated_as_usual(tmp_path: Path) -> None:
    inner = deep_dict(MAX_ARGUMENT_DEPTH - 1)  # plus the {"data": ...} level: exactly the bound
    messages, _, _ = await run_traced(
        tmp_path, [{"tool_calls": [{"name": "store", "arguments": {"data": inner}}]}, {"text": "done"}]
    )
    (result,) = [m for m in messages if m.role == "tool"]
    assert not result.is_error and result.content == "stored"


def test_a_script_line_too_deep_to_read_names_the_line(tmp_path: Path) -> None:
    script = tmp_path / "s.jsonl"
    line = json.dumps({"tool_calls": [{"name": "store", "arguments": deep_text(2_000)}]})  # text: reads fine
    script.write_text(line + "\n" + '{"tool_calls": [{"name": "store", "arguments": ' + deep_text(2_000) + "}]}\n")
    with pytest.raises(ScriptError, match=r"s.jsonl:2: nested too deeply to read"):
        ScriptedModel.from_file(script)
