"""``run_code`` with a scripted model: one script calls two deferred MCP tools of a real
server (mcp-server-time) and returns only what it needs. Each call is an ordinary call of
the run (its own ``tool_result`` event, gates, usage); the raw results stay in the sandbox
and never reach the model."""

from __future__ import annotations

import json

import pytest

from greenroom import events as ev

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SCRIPT = """
const read = (r) => (typeof r === "string" ? JSON.parse(r) : r);
const now = read(await tools.time__get_current_time({timezone: "Asia/Tokyo"}));
const moved = read(await tools.time__convert_time(
  {source_timezone: "Europe/Paris", time: "09:30", target_timezone: "America/New_York"}));
console.log("converted", Object.keys(moved).length, "fields");
return {tokyo_hour: Number(now.datetime.slice(11, 13)), new_york: moved.target.datetime.slice(11, 16)};
"""


async def test_a_script_calls_two_deferred_mcp_tools_and_returns_only_what_it_needs(agent, time_server) -> None:
    turns = [
        {"tool_calls": [{"name": "run_code", "arguments": {"code": SCRIPT}}]},
        {"text": "It is late in Tokyo."},
    ]
    rt, events = await agent(turns, time_server)
    try:
        session = rt.session()
        outcome = await session.run("What hour is it in Tokyo, and 09:30 Paris in New York?")
    finally:
        await rt.aclose()
    assert outcome.stop_reason == "final"
    first = rt.model.requests[0]
    sent = {t.name for t in first.tools}
    assert "run_code" in sent and not sent & {"time__get_current_time", "time__convert_time"}  # deferred
    assert "In run_code scripts, call any tool by name" in first.system_text  # the listing says so

    # what the model read of the script: its return value and console line, nothing else
    result = next(m for m in session.messages if m.role == "tool")
    assert result.name == "run_code" and not result.is_error
    value_text, console = result.content.split("\n\nconsole:\n")
    value = json.loads(value_text)
    assert set(value) == {"tokyo_hour", "new_york"} and 0 <= value["tokyo_hour"] < 24
    assert value["new_york"] in ("03:30", "04:30")  # 6 hours behind Paris (5 around the DST switches)
    assert console.startswith("converted")
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "assistant"]
    seen_by_model = json.dumps([m.content for r in rt.model.requests for m in r.messages])
    assert "is_dst" not in seen_by_model and "day_of_week" not in seen_by_model  # the raw results stayed out

    # the trace: each call of the script is a call of the run, with its raw result
    results = [e for e in events if isinstance(e, ev.ToolExecuted)]
    assert [e.tool for e in results] == ["time__get_current_time", "time__convert_time", "run_code"]
    assert all(not e.is_error for e in results)
    assert "is_dst" in results[0].content and results[0].arguments == {"timezone": "Asia/Tokyo"}
    assert len({e.call_id for e in results}) == 3
