"""``greenroom serve`` in front of an upstream server that takes long to start: the client's
``initialize`` (or ``server/discover``) is answered at once, as a client with a short read
timeout (pydantic-ai gives up after 5 s) needs, and the server's tools follow once it is up;
a server that never comes up holds a request back for its ``connect_timeout`` at most.
The upstream server (gated_server.py) serves only once the test opens its gate (a file),
so it cannot be up while ``initialize`` is answered."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest
from mcp import StdioServerParameters
from mcp.client.client import Client
from support.serve_testutil import serve_argv

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

GATED_SERVER = Path(__file__).with_name("gated_server.py")
READ_TIMEOUT = 5.0  # pydantic-ai's default for an MCP server's answers


def config(tmp_path: Path, gate: Path, connect_timeout: float = 60) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text(
        f"""
[agent]
id = "gw"

[[tools.mcp]]
name = "slow"
command = {sys.executable!r}
args = [{str(GATED_SERVER)!r}]
env = {{ GATE = {str(gate)!r} }}
connect_timeout = {connect_timeout}
defer = false

[plugins]
disable = ["deferred-tools"]
""",
        encoding="utf-8",
    )
    return path


def gateway(path: Path) -> StdioServerParameters:
    argv = serve_argv(path)
    return StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # initialize; server/discover (2026-07-28)
async def test_initialize_is_answered_at_once_and_the_tools_follow(tmp_path: Path, gr_home: Path, mode: str) -> None:
    gate = tmp_path / "gate"
    async with Client(gateway(config(tmp_path, gate)), mode=mode, read_timeout_seconds=READ_TIMEOUT) as client:
        # answered while the upstream server cannot be up: its gate is still closed
        assert not gate.exists()
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else "2026-07-28")
        gate.write_text("open")
        names = [t.name for t in (await client.list_tools()).tools]
        assert names == ["read_result", "slow__echo"]
        called = await client.call_tool("slow__echo", {"text": "up"})
        assert not called.is_error and called.content[0].text == "up"  # type: ignore[union-attr]


async def test_a_server_that_never_starts_holds_a_request_back_for_its_connect_timeout(
    tmp_path: Path, gr_home: Path
) -> None:
    gate = tmp_path / "never"
    async with Client(gateway(config(tmp_path, gate, connect_timeout=1)), read_timeout_seconds=READ_TIMEOUT) as client:
        listed = await client.list_tools()  # within the read timeout: the start gave up after 1 s
        assert [t.name for t in listed.tools] == ["read_result"]  # the server's tools are not there
