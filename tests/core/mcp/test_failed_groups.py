"""A call that names an MCP server's tool finds the server or says why it cannot: a server
that never listed its tools here is started by the call, and one that fails to start
answers with its own (masked) reason, never "there is no tool named X" or "did you mean
X" for X itself. A policy that allows one tool of a server that has not listed its tools
keeps that server's group."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

from greenroom.compose.build import build_runtime

pytestmark = pytest.mark.anyio

FAULT_SERVER = Path(__file__).with_name("fault_server.py")
TOKEN = "sk-fault-server-token-123"


def config(folder: Path, calls: list[dict[str, Any]], extra: str = "") -> Path:
    script = [*({"tool_calls": [c]} for c in calls), {"text": "done"}]
    (folder / "script.jsonl").write_text("\n".join(json.dumps(t) for t in script) + "\n")
    servers = f"""
[[tools.mcp]]
name = "time"
command = {json.dumps(sys.executable)}
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]

[[tools.mcp]]
name = "broken"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(FAULT_SERVER))}]
env = {{ FAULT_FAIL = "1", TOKEN = "{TOKEN}" }}
"""
    path = folder / "agent.toml"
    path.write_text(
        f'[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 6\n{extra}{servers}\n'
        "[plugins.deferred-tools]\nenabled = true\n"
    )
    return path


def dispatch(tool: str, **arguments: Any) -> dict[str, Any]:
    return {"name": "deferred_tool_call", "arguments": {"tool_name": tool, "arguments": arguments}}


async def results(path: Path) -> list[Any]:
    rt = build_runtime(path)
    try:
        session = rt.session()
        await session.run("go")
        return [m for m in session.messages if m.role == "tool"]
    finally:
        await rt.aclose()


async def test_a_server_that_never_listed_is_started_by_a_call_of_its_tool(tmp_path: Path) -> None:
    (now,) = await results(config(tmp_path, [dispatch("time__get_current_time", timezone="UTC")]))
    assert not now.is_error and '"timezone":"UTC"' in now.content


async def test_a_server_that_fails_to_start_answers_with_its_reason(tmp_path: Path) -> None:
    (answer,) = await results(config(tmp_path, [dispatch("broken__echo", text="hi")]))
    assert answer.is_error
    assert "group 'mcp:broken'" in answer.content and "failed to start" in answer.content
    assert "no tool named" not in answer.content and "Did you mean" not in answer.content
    assert TOKEN not in answer.content  # what the server printed is masked


async def test_allowing_one_tool_keeps_the_group_of_a_server_not_yet_listed(tmp_path: Path) -> None:
    policy = '[tools.policy]\nallow = ["time__get_current_time"]\n\n'
    calls = [dispatch("time__get_current_time", timezone="UTC"), dispatch("time__convert_time")]
    allowed, other = await results(config(tmp_path, calls, extra=policy))
    assert not allowed.is_error
    assert other.is_error and "time__convert_time" in other.content


async def test_a_line_on_stdout_that_is_not_mcp_is_one_warning_naming_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    noisy = f"""
[[tools.mcp]]
name = "noisy"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(FAULT_SERVER))}]
env = {{ FAULT_GARBAGE = "1" }}

"""
    caplog.set_level(logging.WARNING)
    (echoed,) = await results(config(tmp_path, [dispatch("noisy__echo", text="hi")], extra=noisy))
    assert not echoed.is_error and echoed.content == "hi"  # the session went on
    (warned,) = [r for r in caplog.records if "not MCP" in r.getMessage()]
    assert "'noisy'" in warned.getMessage() and "Starting fault server v1" in warned.getMessage()
    assert not [r for r in caplog.records if r.name == "mcp.client.stdio"]  # no SDK traceback
