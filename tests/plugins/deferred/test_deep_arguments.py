"""deferred_tool_call with inner arguments nested 1,000 levels deep: the call gets an error
result saying they are nested too deeply, and the run goes on."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenroom import events as ev
from greenroom import tool
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin

pytestmark = pytest.mark.anyio

LEVELS = 1_000


@tool
def store(data: dict) -> str:  # type: ignore[type-arg]
    """Store a document in the archive."""
    return "stored"


def deep_dict() -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(LEVELS - 1):
        value = {"a": value}
    return value


def dispatch(arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": "store", "arguments": arguments}}]}


async def run(make_runtime: Any, *turns: dict[str, Any]) -> tuple[list[str], list[ev.Event]]:
    rt = make_runtime(
        [*turns, {"text": "done"}],
        tools=[store],
        plugins=[DeferredToolsPlugin(DeferredConfig(enabled=True, default_mode="deferred"))],
    )
    seen: list[ev.Event] = []
    rt.events.subscribe(seen.append)
    s = rt.session()
    outcome = await s.run("archive it")
    assert outcome.stop_reason == "final" and outcome.text == "done"
    json.dumps([e.to_json() for e in seen])  # every event can be written to a trace
    return [m.content for m in s.messages if m.role == "tool"], seen


async def test_inner_arguments_sent_as_deep_text_are_answered_as_too_deep(make_runtime: Any) -> None:
    text = '{"data":' + '{"a":' * (LEVELS - 1) + "{}" + "}" * LEVELS  # json.loads of it raises RecursionError
    results, seen = await run(make_runtime, dispatch(text))
    (result,) = results
    assert "the arguments for 'store' are nested too deeply" in result
    (resolved,) = [e for e in seen if isinstance(e, ev.ToolCallResolved)]
    assert (resolved.requested, resolved.resolved) == ("deferred_tool_call", "store")


async def test_inner_arguments_sent_as_a_deep_object_are_answered_as_too_deep(make_runtime: Any) -> None:
    results, _ = await run(make_runtime, dispatch({"data": deep_dict()}))
    # the whole call is over the bound, so the dispatcher's own arguments are what is too deep
    assert "the arguments for 'deferred_tool_call' are nested too deeply" in results[0]


async def test_inner_arguments_within_the_bound_still_reach_the_tool(make_runtime: Any) -> None:
    results, _ = await run(make_runtime, dispatch('{"data": {"a": {"b": [1, 2]}}}'), dispatch({"data": {"x": 1}}))
    assert results == ["stored", "stored"]
