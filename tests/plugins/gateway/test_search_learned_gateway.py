"""Through one gateway, what one client's calls teach never hides a tool from another
client's search: once a client's use makes ``time__get_current_time`` eager, a client
that searches "current time" is told it is already available (it is in that client's
tool list), and a client whose session started before still gets its schema. Two SDK
clients over streamable HTTP, one ``greenroom serve`` process, the real time server."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import anyio
import pytest
from support.serve_testutil import HttpGateway, http_client, learning_config, priors_sessions, wait_until

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOL = "time__get_current_time"


def learned(folder: Path) -> int:
    """Sessions the store holds (0 also while the first save is creating it)."""
    try:
        return priors_sessions(folder)
    except sqlite3.Error:
        return 0


def text_of(result: object) -> str:
    return "\n".join(getattr(c, "text", "") for c in getattr(result, "content", []))


def schemas(text: str) -> list[str]:
    return [json.loads(raw)["name"] for raw in re.findall(r"<function>(.*?)</function>", text)]


async def test_one_clients_use_never_hides_a_tool_from_another_clients_search(tmp_path: Path) -> None:
    config = learning_config(tmp_path)
    gateway = HttpGateway(config, env={"GREENROOM_HOME": str(tmp_path / "home")})
    try:
        async with http_client(gateway.url) as early:
            # placed before anything was learned: the tool is deferred for this client
            assert TOOL not in [t.name for t in (await early.list_tools()).tools]
            async with http_client(gateway.url) as first:
                assert TOOL not in [t.name for t in (await first.list_tools()).tools]
                assert not (await first.call_tool(TOOL, {"timezone": "UTC"})).is_error
            # the first client left: its run ended, and what it did was learned
            assert await anyio.to_thread.run_sync(lambda: wait_until(lambda: learned(tmp_path) >= 1))
            async with http_client(gateway.url) as later:
                assert TOOL in [t.name for t in (await later.list_tools()).tools]  # learned eager
                found = text_of(await later.call_tool("ToolSearch", {"query": "current time"}))
                assert re.search(rf"Already available \(in your tool list, call directly\): [^\n]*{TOOL}", found)
                assert TOOL not in schemas(found)  # its schema is in the client's tool list
            # the client whose session began before the learning still finds it deferred
            found = text_of(await early.call_tool("ToolSearch", {"query": "current time"}))
            assert TOOL in schemas(found)
    finally:
        gateway.stop()
