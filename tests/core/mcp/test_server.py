"""One MCP server without a live session: its config rule, redaction, and clear start errors."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from greenroom.config import McpServerConfig
from greenroom.mcp import McpError, McpServer, McpStartError


def test_a_server_needs_a_command_or_a_url() -> None:
    with pytest.raises(McpError, match="exactly one of 'command'"):
        McpServer(McpServerConfig(name="x"))


def test_the_token_of_an_auth_header_is_redacted_on_its_own(tmp_path: Path) -> None:
    # servers quote the token without its scheme ("invalid token: ..."); greenroom puts
    # such text in error results, so the bare token must be removed as well
    cfg = McpServerConfig(
        name="remote",
        url="https://mcp.example.com/mcp",
        headers={"Authorization": "Bearer tok-abcdef123456", "X-Api-Key": "key-987654321"},
    )
    redact = McpServer(cfg, tmp_path)._redact
    assert redact("rejected: invalid token tok-abcdef123456") == "rejected: invalid token ***"
    assert redact("header Bearer tok-abcdef123456 and key-987654321") == "header *** and ***"
    assert redact("use a Bearer token") == "use a Bearer token"  # the scheme alone is no secret


def test_credentials_in_a_url_are_redacted_in_what_the_server_says(tmp_path: Path) -> None:
    cfg = McpServerConfig(
        name="hosted", url="https://robot-user:pw-abcdef12@mcp.example.com/mcp?token=qt-0123456789&v=2"
    )
    redact = McpServer(cfg, tmp_path)._redact
    said = "401 for url 'https://robot-user:pw-abcdef12@mcp.example.com/mcp?token=qt-0123456789&v=2'"
    assert redact(said) == "401 for url 'https://***:***@mcp.example.com/mcp?token=***&v=2'"


@pytest.mark.anyio
async def test_an_unreachable_http_server_is_a_clear_error(tmp_path: Path) -> None:
    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    cfg = McpServerConfig(
        name="remote", url=f"http://127.0.0.1:{port}/mcp", headers={"Authorization": "Bearer tok-123456"}
    )
    server = McpServer(cfg, tmp_path)
    try:
        with pytest.raises(McpStartError) as info:
            await server.start()
    finally:
        await server.aclose()
    msg = str(info.value)
    assert msg.startswith(f"MCP server 'remote' failed to start (url: http://127.0.0.1:{port}/mcp)")
    assert "tok-123456" not in msg


@pytest.mark.anyio
async def test_a_missing_command_is_a_clear_error(tmp_path: Path) -> None:
    cfg = McpServerConfig(name="ghost", command="greenroom-no-such-command", env={"TOKEN": "s3cret-token-value"})
    server = McpServer(cfg, tmp_path)
    try:
        result = await server.call_tool("anything", {})
    finally:
        await server.aclose()
    assert result.is_error
    assert "MCP server 'ghost' failed to start (command: greenroom-no-such-command)" in result.content
    assert "command not found" in result.content and "s3cret" not in result.content
    assert not server._host.running
