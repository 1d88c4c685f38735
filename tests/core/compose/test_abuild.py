"""``abuild_runtime``: building from async code never blocks the caller's event loop, even
while MCP servers start and list their tools."""

from __future__ import annotations

import sys
from pathlib import Path

import anyio
import pytest

from greenroom.compose.build import abuild_runtime

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def test_the_event_loop_runs_while_servers_start(tmp_path: Path) -> None:
    pytest.importorskip("mcp_server_time", reason="needs mcp-server-time")
    config = tmp_path / "agent.toml"
    config.write_text(
        '[agent]\nid = "abuild"\nmodel = "scripted:"\n'
        f'[[tools.mcp]]\nname = "time"\ncommand = "{sys.executable}"\n'
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\ndefer = false\n',
        encoding="utf-8",
    )
    ticks = 0
    built = anyio.Event()

    async def heartbeat() -> None:
        nonlocal ticks
        while not built.is_set():
            await anyio.sleep(0.005)
            ticks += 1

    async with anyio.create_task_group() as tg:
        tg.start_soon(heartbeat)
        rt = await abuild_runtime(config)
        built.set()
    try:
        # the server was started and listed during the build: its tools are the runtime's
        assert any(name.startswith("time") for name in rt.tools)
        assert ticks > 3  # the loop kept turning while the server started
    finally:
        await rt.aclose()
