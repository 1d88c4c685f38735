"""A client nobody here wrote: the MCP Inspector's CLI mode lists the gateway's tools,
calls the search and then a found tool, over stdio and over streamable HTTP.

``.ci/run`` installs the Inspector with npm and names its binary in
``GREENROOM_MCP_INSPECTOR``; outside CI the test skips when it is not installed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from support.serve_testutil import HttpGateway, inspector_binary

pytestmark = pytest.mark.slow


@pytest.fixture
def inspector() -> str:
    found = inspector_binary()
    if found is None:
        if os.environ.get("GREENROOM_CI") or os.environ.get("CI"):
            pytest.fail("the MCP Inspector is not installed: .ci/run installs it and sets GREENROOM_MCP_INSPECTOR")
        pytest.skip(
            "needs the MCP Inspector: npm install --prefix .ci/node @modelcontextprotocol/inspector, "
            "then GREENROOM_MCP_INSPECTOR=.ci/node/node_modules/.bin/mcp-inspector"
        )
    return found


def run_inspector(inspector: str, target: list[str], *args: str) -> Any:
    done = subprocess.run(
        [inspector, "--cli", *target, *args], capture_output=True, text=True, timeout=120, env=dict(os.environ)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout)


def texts(result: Any) -> str:
    return "\n".join(block.get("text", "") for block in result["content"])


def test_inspector_lists_the_tools_over_stdio(inspector: str, make_config: Callable[..., Path]) -> None:
    target = [sys.executable, "-m", "greenroom.cli", "serve", str(make_config())]
    listed = run_inspector(inspector, target, "--method", "tools/list")
    names = [t["name"] for t in listed["tools"]]
    assert "ToolSearch" in names and "deferred_tool_call" in names
    assert not any(n.startswith("time__") for n in names)


def test_inspector_searches_and_calls_a_found_tool_over_http(
    inspector: str, make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway]
) -> None:
    gw = http_gateway(make_config())
    target = [gw.url, "--transport", "http"]
    listed = run_inspector(inspector, target, "--method", "tools/list")
    assert "ToolSearch" in [t["name"] for t in listed["tools"]]

    found = run_inspector(
        inspector, target, "--method", "tools/call", "--tool-name", "ToolSearch", "--tool-arg", "query=current time"
    )
    assert not found["isError"] and "time__get_current_time" in texts(found)

    called = run_inspector(
        inspector,
        target,
        "--method",
        "tools/call",
        "--tool-name",
        "deferred_tool_call",
        "--tool-arg",
        "tool_name=time__get_current_time",
        'arguments={"timezone": "Asia/Tokyo"}',
    )
    assert not called["isError"] and called["structuredContent"]["timezone"] == "Asia/Tokyo"
