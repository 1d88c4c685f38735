"""A system section marked stable that changes step after step is reported (an event in
the trace, a warning in the log, once per session and section); one that changes now and
then, one marked ``stable=False`` and one that stays the same say nothing."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from greenroom import Plugin, RequestDraft, RunContext, SystemSection, hookimpl

pytestmark = pytest.mark.anyio


class Clock(Plugin):
    """Puts the step number in a system section."""

    name = "clock"

    def __init__(self, stable: bool, changing: bool = True, every: int = 1) -> None:
        super().__init__()
        self.stable = stable
        self.changing = changing
        self.every = every

    @hookimpl
    def greenroom_before_inference(self, ctx: RunContext, request: RequestDraft) -> None:
        text = f"step {ctx.step // self.every}" if self.changing else "always the same"
        request.set_section(SystemSection("clock", text, stable=self.stable))


def script() -> list[dict[str, Any]]:
    calls = [{"tool_calls": [{"name": "nothing", "arguments": {}}]} for _ in range(7)]
    return [*calls, {"text": "done"}]


async def run(make_runtime: Any, plugin: Clock) -> list[Any]:
    rt = make_runtime(script(), plugins=[plugin])
    events: list[Any] = []
    rt.events.subscribe(events.append)
    await rt.run(rt.session(), "go")
    return [e for e in events if e.kind == "stable_section_changed"]


async def test_a_stable_section_that_changes_is_reported(make_runtime: Any, caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="greenroom"):
        changed = await run(make_runtime, Clock(stable=True))
    assert [e.step for e in changed] == [4] and changed[0].key == "clock"  # changed at steps 2, 3, 4
    warnings = [r for r in caplog.records if "marked stable but changed" in r.getMessage()]
    assert len(warnings) == 1  # once per session and section
    assert "stable section 'clock' changes every step" in changed[0].describe()


async def test_an_occasional_unstable_or_unchanging_section_says_nothing(make_runtime: Any) -> None:
    assert await run(make_runtime, Clock(stable=True, every=2)) == []  # changes every other step
    assert await run(make_runtime, Clock(stable=False)) == []
    assert await run(make_runtime, Clock(stable=True, changing=False)) == []
