"""How MCP messages name a server: its command or URL, never its secrets."""

from __future__ import annotations

from greenroom.config import McpServerConfig
from greenroom.mcp import describe_target


def test_targets_are_described_without_secrets() -> None:
    cfg = McpServerConfig(name="h", url="https://user:pw@example.com:8443/mcp?token=abc", headers={"X": "y"})
    assert describe_target(cfg) == "url: https://example.com:8443/mcp"
    assert describe_target(McpServerConfig(name="v6", url="http://[::1]:8000/mcp?k=v")) == "url: http://[::1]:8000/mcp"
    cfg = McpServerConfig(name="s", command="npx", args=("-y", "server pkg"), env={"K": "secret"})
    assert describe_target(cfg) == "command: npx -y 'server pkg'"
