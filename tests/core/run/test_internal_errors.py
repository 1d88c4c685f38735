"""A failure of greenroom itself at a tool-call boundary (a result it cannot render, a
value a plugin handed it that is not what it should be) fails that call only: the model
reads an error result with no traceback, the trace gets an ``internal_error`` event with
one, and the run goes on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from greenroom import Plugin, hookimpl, tool
from greenroom import events as ev

pytestmark = pytest.mark.anyio

MESSAGE = "internal error in greenroom while running {!r}; the call was not completed"


class Unprintable:
    """A value neither json nor str can render."""

    def __str__(self) -> str:
        raise RuntimeError("secret-ish detail of __str__")

    __repr__ = __str__


@tool
def weird() -> Any:
    """Return something that cannot be shown."""
    return Unprintable()


@tool
def fine(text: str) -> str:
    """Echo."""
    return f"fine {text}"


def recorder(rt: Any) -> list[ev.Event]:
    seen: list[ev.Event] = []
    rt.events.subscribe(seen.append)
    return seen


async def test_a_result_that_cannot_be_rendered_is_an_error_result_and_an_internal_error_event(
    make_runtime: Any, tmp_path: Path
) -> None:
    rt = make_runtime(
        [
            {"tool_calls": [{"name": "weird", "arguments": {}}, {"name": "fine", "arguments": {"text": "a"}}]},
            {"text": "done"},
        ],
        tools=[weird, fine],
    )
    seen = recorder(rt)
    trace = ev.TraceWriter(tmp_path / "t.jsonl")
    rt.events.subscribe(trace)
    outcome = await rt.session().run("go")
    trace.close()
    assert outcome.stop_reason == "final" and outcome.text == "done"  # the run went on
    results = [m for m in rt.model.requests[1].messages if m.role == "tool"]
    assert [(m.content, m.is_error) for m in results] == [(MESSAGE.format("weird"), True), ("fine a", False)]
    (internal,) = [e for e in seen if isinstance(e, ev.InternalError)]
    assert (internal.tool, internal.call_id, internal.step) == ("weird", "call_1_0", 1)
    assert internal.error_type == "RuntimeError" and internal.message == "secret-ish detail of __str__"
    assert "Traceback" in internal.traceback and "__str__" in internal.traceback
    # the model never reads the traceback; the trace has it
    assert all("__str__" not in m.content for m in rt.model.requests[1].messages)
    records = [json.loads(line) for line in (tmp_path / "t.jsonl").read_text(encoding="utf-8").splitlines()]
    (traced,) = [r for r in records if r["kind"] == "internal_error"]
    assert traced["tool"] == "weird" and "Traceback" in traced["traceback"]
    # the two calls ran side by side: their results are traced as each finished, in either order
    traced_results = {r["tool"]: r["content"] for r in records if r["kind"] == "tool_result"}
    assert traced_results == {"weird": MESSAGE.format("weird"), "fine": "fine a"}
    assert records[-1]["kind"] == "run_end" and records[-1]["stop_reason"] == "final"


async def test_a_broken_value_from_a_plugin_fails_only_its_call(make_runtime: Any) -> None:
    """A resolve hook that returns something that is not a call: that plugin's failure,
    named, and its call alone fails."""

    class Garbled(Plugin):
        name = "garbled"

        @hookimpl
        def greenroom_resolve_tool_call(self, ctx: Any, call: Any) -> Any:
            return "not a call" if call.name == "weird" else None

    rt = make_runtime(
        [
            {"tool_calls": [{"name": "weird", "arguments": {}}]},
            {"tool_calls": [{"name": "fine", "arguments": {"text": "b"}}]},
            {"text": "ok"},
        ],
        tools=[weird, fine],
        plugins=[Garbled()],
    )
    seen = recorder(rt)
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final"
    tool_messages = [(m.content, m.is_error) for m in session.messages if m.role == "tool"]
    assert tool_messages[1] == ("fine b", False)
    garbled, is_error = tool_messages[0]
    assert is_error and "plugin 'garbled' failed in greenroom_resolve_tool_call" in garbled
    assert "returned an answer of type str ('not a call'); expected a ToolCall" in garbled
    assert [(e.plugin, e.call_id) for e in seen if isinstance(e, ev.PluginError)] == [("garbled", "call_1_0")]
    assert not [e for e in seen if isinstance(e, ev.InternalError)]


async def test_an_exception_with_a_huge_or_broken_text_is_reported_bounded(make_runtime: Any) -> None:
    class Loud(Exception):
        def __str__(self) -> str:
            return "x" * 5_000_000

    class Mute(Exception):
        def __str__(self) -> str:
            raise ValueError("no text")

    errors = iter([Loud(), Mute()])

    class Raising(Plugin):
        name = "raising"

        @hookimpl
        def greenroom_resolve_tool_call(self, ctx: Any, call: Any) -> Any:
            raise next(errors)

    rt = make_runtime(
        [{"tool_calls": [{"name": "fine", "arguments": {"text": "a"}}, {"name": "fine", "arguments": {"text": "b"}}]},
         {"text": "ok"}],
        tools=[fine],
        plugins=[Raising()],
        max_concurrency=1,
    )  # fmt: skip
    seen = recorder(rt)
    assert (await rt.session().run("go")).stop_reason == "final"
    loud, mute = [e for e in seen if isinstance(e, ev.PluginError)]
    assert loud.message.startswith("Loud: xxx") and len(loud.message) < 5_000
    assert mute.message.startswith("Mute: ") and "could not be read" in mute.message
