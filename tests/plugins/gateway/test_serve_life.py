"""The gateway's life: upstream servers start when first needed and end with the
gateway; a crashing upstream server costs its caller an error result and is restarted
for the next call; a client that leaves mid-call cancels its call upstream."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest
from support.serve_testutil import HttpGateway, http_client, processes_with, serve_argv, stdio_gateway, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

DISPATCH = "deferred_tool_call"


async def test_a_crashed_server_is_an_error_result_and_restarts(
    make_config: Callable[..., Path], tmp_path: Path
) -> None:
    marker = str(tmp_path)  # in the rich server's command line, and no other test's
    config = make_config(marker=marker)
    async with stdio_gateway(config) as client:
        crashed = await client.call_tool(DISPATCH, {"tool_name": "rich__crash", "arguments": {}})
        assert crashed.is_error
        text = " ".join(b.text for b in crashed.content if isinstance(b, t.TextContent))
        assert "rich" in text
        again = await client.call_tool(DISPATCH, {"tool_name": "rich__picture", "arguments": {}})
        assert not again.is_error and isinstance(again.content[0], t.ImageContent)
        assert len(processes_with(f"rich_server.py {marker}")) == 1
    # the gateway ended with its client, and its upstream servers with it
    assert wait_until(lambda: processes_with(f"rich_server.py {marker}") == [])
    # with the listings cached by then, a server starts only when a call needs it
    async with stdio_gateway(config) as client:
        assert "rich__picture" in (client.init.instructions or "")
        await client.list_tools()
        assert processes_with(f"rich_server.py {marker}") == []
        await client.call_tool(DISPATCH, {"tool_name": "rich__picture", "arguments": {}})
        assert len(processes_with(f"rich_server.py {marker}")) == 1


async def test_a_client_leaving_mid_call_cancels_it_upstream(
    make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway], tmp_path: Path
) -> None:
    mark = tmp_path / "slow.mark"
    gw = http_gateway(make_config(marker=str(tmp_path)))
    with anyio.move_on_after(60):
        async with http_client(gw.url) as client, anyio.create_task_group() as tg:
            tg.start_soon(client.call_tool, DISPATCH, {"tool_name": "rich__slow", "arguments": {}})
            while not (mark.exists() and mark.read_text() == "started"):  # bounded by move_on_after
                await anyio.sleep(0.05)
            tg.cancel_scope.cancel()  # the client gives up and leaves
    assert mark.read_text() in ("started", "cancelled")
    assert await anyio.to_thread.run_sync(lambda: wait_until(lambda: mark.read_text() == "cancelled"))
    # the gateway still serves others
    async with http_client(gw.url) as other:
        weather = await other.call_tool(DISPATCH, {"tool_name": "rich__weather", "arguments": {"city": "Kyiv"}})
        assert weather.structured_content == {"city": "Kyiv", "celsius": 21.5}
    assert gw.stop() == 0
    assert wait_until(lambda: processes_with(f"rich_server.py {tmp_path}") == [])


def test_sigterm_over_stdio_keeps_what_was_learned_and_stops_the_servers(
    make_config: Callable[..., Path], tmp_path: Path
) -> None:
    marker = str(tmp_path)
    proc = subprocess.Popen(
        serve_argv(make_config(agent_id="ended", marker=marker)),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(message: dict[str, Any]) -> None:
        proc.stdin.write((json.dumps(message) + "\n").encode())  # type: ignore[union-attr]
        proc.stdin.flush()  # type: ignore[union-attr]

    client = {"name": "raw", "version": "1"}
    send(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": client},
        }
    )
    assert json.loads(proc.stdout.readline())["id"] == 1
    send({"jsonrpc": "2.0", "method": "notifications/initialized"})
    call = {"name": DISPATCH, "arguments": {"tool_name": "rich__weather", "arguments": {"city": "Oslo"}}}
    send({"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": call})
    assert json.loads(proc.stdout.readline())["result"]["structuredContent"]["city"] == "Oslo"
    assert len(processes_with(f"rich_server.py {marker}")) == 1

    proc.send_signal(signal.SIGTERM)  # the client still holds stdin open
    assert proc.wait(30) == 0
    assert processes_with(f"rich_server.py {marker}") == []
    exported = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "priors", "export", "ended"], capture_output=True, text=True
    )
    assert exported.returncode == 0 and "rich__weather" in exported.stdout
