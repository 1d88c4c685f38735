"""An upstream server whose tools change while the gateway runs: every client hears of it
the way its revision allows (a 2025-11-25 connection by ``notifications/tools/list_changed``,
a 2026-07-28 caller through ``subscriptions/listen``), and lists and calls the new tool,
whichever client's call made the change."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import mcp_types as t
import pytest
from mcp.client.client import Client
from support.serve_testutil import HttpGateway

pytestmark = pytest.mark.anyio

CHANGING = Path(__file__).resolve().parents[2] / "core" / "mcp" / "changing_server.py"


def names(listed: t.ListToolsResult) -> set[str]:
    return {tool.name for tool in listed.tools}


async def test_a_tool_an_upstream_server_adds_reaches_every_client(
    tmp_path: Path, http_gateway: Callable[..., HttpGateway]
) -> None:
    config = tmp_path / "gateway.toml"
    config.write_text(
        '[agent]\nmodel = "anthropic:claude-sonnet-4-5"\n\n'
        f'[[tools.mcp]]\nname = "changing"\ncommand = {sys.executable!r}\nargs = [{str(CHANGING)!r}]\n'
        "defer = false\n",
        encoding="utf-8",
    )
    gateway = http_gateway(config)
    told = anyio.Event()

    async def heard(message: object) -> None:
        if isinstance(message, t.ToolListChangedNotification):
            told.set()

    async with (
        Client(gateway.url, mode="legacy", message_handler=heard) as legacy,
        Client(gateway.url, mode="2026-07-28") as modern,
    ):
        assert "changing__flip" not in names(await legacy.list_tools())
        assert "changing__flip" not in names(await modern.list_tools())
        async with modern.listen(tools_list_changed=True) as changes:
            grown = await modern.call_tool("changing__grow", {"name": "flip"})
            assert not grown.is_error
            with anyio.fail_after(30):
                await told.wait()  # the other client, on its own connection
                event = await changes.__anext__()
            assert type(event).__name__ == "ToolsListChanged"
        assert "changing__flip" in names(await legacy.list_tools())
        assert "changing__flip" in names(await modern.list_tools(cache_mode="refresh"))
        flipped = await legacy.call_tool("changing__flip", {"text": "abc"})
        assert not flipped.is_error and flipped.content[0].text == "cba"  # type: ignore[union-attr]
