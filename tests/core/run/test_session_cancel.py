"""A cancelled run (what one Ctrl-C does to ``greenroom run``) ends cleanly wherever it
waits, a hook that hangs included: RunEnd reaches every plugin, the trace ends with
``run_end`` ("cancelled"), and the session holds every call answered."""

from __future__ import annotations

from typing import Any

import anyio
import pytest

from greenroom import events as ev
from greenroom.plugins.discovery import Plugin, hookimpl
from greenroom.tools import tool


@tool
def echo(text: str) -> str:
    """Echo.

    Args:
        text: What to say.
    """
    return text


class HangsInAGate(Plugin):
    """A per-call hook that never returns, and a RunEnd that records how the run ended."""

    name = "hangs"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.started = anyio.Event()
        self.ended: list[str] = []

    @hookimpl
    async def greenroom_before_tool_execute(self, ctx: Any, call: Any, tool: Any) -> None:
        self.started.set()
        await anyio.Event().wait()

    @hookimpl
    def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
        self.ended.append(outcome.stop_reason)


class Watches(Plugin):
    """Another plugin, to show RunEnd reaches every plugin, not only the one that hung."""

    name = "watches"

    def __init__(self, config: Any = None) -> None:
        super().__init__(config)
        self.ended: list[str] = []

    @hookimpl
    def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
        self.ended.append(outcome.stop_reason)


@pytest.mark.anyio
async def test_cancelling_a_run_stuck_in_a_hanging_hook_ends_it_cleanly(make_runtime) -> None:
    hangs, watches = HangsInAGate(), Watches()
    calls = [{"name": "echo", "arguments": {"text": "a"}}, {"name": "echo", "arguments": {"text": "b"}}]
    rt = make_runtime([{"tool_calls": calls}], tools=[echo], plugins=[hangs, watches])
    seen: list[ev.Event] = []
    rt.events.subscribe(seen.append)
    session = rt.session()
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run, "go")
        await hangs.started.wait()
        tg.cancel_scope.cancel()
    assert hangs.ended == watches.ended == ["cancelled"]
    last = seen[-1]
    assert isinstance(last, ev.RunFinished) and last.stop_reason == "cancelled"
    answered = [(m.tool_call_id, m.is_error, m.content) for m in session.messages if m.role == "tool"]
    assert answered == [
        ("call_1_0", True, "tool 'echo' cancelled before it finished"),
        ("call_1_1", True, "tool 'echo' cancelled before it finished"),
    ]
