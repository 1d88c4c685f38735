"""Hostile scripts: each kind ends as an error result the model reads (or, for a flood of
console output, a bounded one), the run goes on to its next turn, and no sandbox process
outlives its script."""

from __future__ import annotations

import runpy
from pathlib import Path

import pytest

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

LIMITS = "[plugins.code-mode]\ntimeout = 3\nmemory_mb = 64\nmax_calls = 20\nmax_message_bytes = 65536\n"
TOOLS = '[tools]\npython = ["echo_tools.py:TOOLS"]\n'
SCRIPTS = runpy.run_path(str(Path(__file__).with_name("hostile_scripts.py")))
HOSTILE: dict[str, tuple[str, str]] = SCRIPTS["HOSTILE"]


@pytest.fixture
def tools_module(tmp_path: Path) -> None:
    (tmp_path / "echo_tools.py").write_text(SCRIPTS["ECHO_TOOLS"], encoding="utf-8")


@pytest.mark.parametrize("kind", list(HOSTILE))
async def test_hostile_code_ends_as_an_error_and_the_run_goes_on(kind, agent, tools_module, sandboxes) -> None:
    code, expected = HOSTILE[kind]
    turns = [{"tool_calls": [{"name": "run_code", "arguments": {"code": code}}]}, {"text": "moving on"}]
    rt, _ = await agent(turns, TOOLS + LIMITS)
    try:
        session = rt.session()
        outcome = await session.run("go")
    finally:
        await rt.aclose()
    result = next(m for m in session.messages if m.role == "tool")
    assert result.is_error, result.content
    assert expected in result.content
    assert outcome.stop_reason == "final" and outcome.text == "moving on"
    assert sandboxes() == []


async def test_a_flood_of_console_output_is_cut_to_its_bound(agent, tools_module) -> None:
    code = "for (let i = 0; i < 100000; i++) console.log('line', i, 'x'.repeat(100)); return 'finished'"
    turns = [{"tool_calls": [{"name": "run_code", "arguments": {"code": code}}]}, {"text": "ok"}]
    rt, _ = await agent(turns, TOOLS + LIMITS + "console_chars = 500\n")
    try:
        session = rt.session()
        await session.run("go")
    finally:
        await rt.aclose()
    result = next(m for m in session.messages if m.role == "tool")
    assert not result.is_error
    assert result.content.startswith("finished\n\nconsole:\nline 0 ")
    assert len(result.content) < 700 and "more characters of console output left out" in result.content
