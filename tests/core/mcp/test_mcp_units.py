"""MCP pieces that need no server: result mapping, naming, cache, redaction, groups from cache."""

from __future__ import annotations

import json
import logging
import socket
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

import mcp_types as types

from greenroom.config import McpServerConfig
from greenroom.mcp import (
    McpError,
    McpListing,
    McpServer,
    McpStartError,
    McpToolset,
    McpToolSpec,
    ToolNamer,
    cache_key,
    cache_path,
    describe_target,
    read_cached_listing,
    to_tool_result,
    write_cached_listing,
)

SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def seed_cache(config: McpServerConfig, base_dir: Path, tools: list[str], instructions: str | None = None) -> None:
    """Write a listing as an earlier process would have, so nothing needs to start."""
    specs = tuple(McpToolSpec(name=t, description=f"The {t} tool.", input_schema=SCHEMA) for t in tools)
    write_cached_listing(config, base_dir, McpListing(tools=specs, instructions=instructions, listed_at=1.0))


# ----------------------------------------------------------------------------- results


def test_text_parts_are_joined_and_structured_content_kept() -> None:
    r = to_tool_result(
        types.CallToolResult(
            content=[types.TextContent(text="one"), types.TextContent(text="two")], structured_content={"n": 2}
        )
    )
    assert (r.content, r.is_error, r.structured) == ("one\ntwo", False, {"n": 2})


def test_structured_only_result_is_rendered_as_json() -> None:
    r = to_tool_result(types.CallToolResult(content=[], structured_content={"b": 1, "a": [1, 2]}))
    assert json.loads(r.content) == {"a": [1, 2], "b": 1}
    assert r.structured == {"a": [1, 2], "b": 1}


def test_images_audio_and_resources_become_placeholders() -> None:
    r = to_tool_result(
        types.CallToolResult(
            content=[
                types.ImageContent(data="aGVsbG8=", mime_type="image/png"),
                types.AudioContent(data="aGk=", mime_type="audio/wav"),
                types.ResourceLink(name="log", uri="file:///tmp/log.txt", mime_type="text/plain"),
                types.EmbeddedResource(resource=types.TextResourceContents(uri="mem://a", text="inline text")),
                types.EmbeddedResource(
                    resource=types.BlobResourceContents(uri="mem://b", blob="aGVsbG8=", mime_type="application/zip")
                ),
            ]
        )
    )
    assert r.content.splitlines() == [
        "[image: image/png, 5 bytes]",
        "[audio: audio/wav, 2 bytes]",
        "[resource link: log <file:///tmp/log.txt> (text/plain)]",
        "[resource <mem://a>]",
        "inline text",
        "[resource <mem://b> (application/zip), 5 bytes]",
    ]


def test_is_error_maps_to_an_error_result() -> None:
    r = to_tool_result(types.CallToolResult(content=[types.TextContent(text="bad zone")], is_error=True))
    assert r.is_error and r.content == "bad zone"
    empty = to_tool_result(types.CallToolResult(content=[], is_error=True))
    assert empty.is_error and "error" in empty.content


# ----------------------------------------------------------------------------- naming


def test_prefixed_names_and_unsafe_characters() -> None:
    namer = ToolNamer()
    assert namer.name("time", "get_current_time", "prefixed") == "time__get_current_time"
    assert namer.name("my.server", "do it", "prefixed") == "my_server__do_it"


def test_bare_names_fall_back_to_prefixed_when_ambiguous(caplog: pytest.LogCaptureFixture) -> None:
    namer = ToolNamer(reserved=["search"])
    assert namer.name("a", "status", "bare") == "status"
    with caplog.at_level(logging.WARNING, logger="greenroom.mcp"):
        assert namer.name("b", "status", "bare") == "b__status"
        assert namer.name("c", "search", "bare") == "c__search"
    assert "server 'a'" in caplog.text
    assert namer.name("a", "status", "bare") == "status"  # stable on re-listing


def test_toolset_naming_follows_config_order(tmp_path: Path) -> None:
    first = McpServerConfig(name="first", command="srv-one", naming="bare")
    second = McpServerConfig(name="second", command="srv-two", naming="bare")
    seed_cache(first, tmp_path, ["status", "log"])
    seed_cache(second, tmp_path, ["status", "diff"])
    ts = McpToolset([first, second], tmp_path, reserved_names=["log"])
    names = {g.id: [d.name for d in g.known] for g in ts.groups()}
    assert names == {"mcp:first": ["status", "first__log"], "mcp:second": ["second__status", "diff"]}


def test_duplicate_server_names_are_rejected() -> None:
    with pytest.raises(McpError, match="two MCP servers are named 'x'"):
        McpToolset([McpServerConfig(name="x", command="a"), McpServerConfig(name="x", command="b")])


def test_a_server_needs_a_command_or_a_url() -> None:
    with pytest.raises(McpError, match="exactly one of 'command'"):
        McpServer(McpServerConfig(name="x"))


# ----------------------------------------------------------------------------- cache


def test_cache_key_ignores_secrets_and_depends_on_what_runs(tmp_path: Path) -> None:
    a = McpServerConfig(name="a", command="srv", args=("--x",), env={"TOKEN": "one"})
    b = McpServerConfig(name="b", command="srv", args=("--x",), env={"TOKEN": "two"})
    c = McpServerConfig(name="a", command="srv", args=("--y",))
    assert cache_key(a, tmp_path) == cache_key(b, tmp_path) != cache_key(c, tmp_path)
    h1 = McpServerConfig(name="h", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer one"})
    h2 = McpServerConfig(name="h", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer two"})
    assert cache_key(h1) == cache_key(h2)


def test_cache_round_trip_and_no_secrets_on_disk(tmp_path: Path, gr_home: Path) -> None:
    cfg = McpServerConfig(name="s", command="srv", env={"API_TOKEN": "very-secret-value"})
    seed_cache(cfg, tmp_path, ["alpha"], instructions="Use alpha.")
    path = cache_path(cfg, tmp_path)
    assert path.parent == gr_home / "mcp-cache"
    assert "very-secret-value" not in path.read_text()
    listing = read_cached_listing(cfg, tmp_path)
    assert listing is not None and listing.instructions == "Use alpha."
    assert listing.tools[0] == McpToolSpec(name="alpha", description="The alpha tool.", input_schema=SCHEMA)
    path.write_text("{not json")
    assert read_cached_listing(cfg, tmp_path) is None


def test_groups_come_from_the_cache_without_starting_anything(tmp_path: Path) -> None:
    cfg = McpServerConfig(name="docs", command="no-such-binary", timeout=7, description=None)
    seed_cache(cfg, tmp_path, ["search", "fetch"], instructions="\nDocumentation search.\nMore text.")
    ts = McpToolset([cfg], tmp_path)
    ts.prepare_blocking()  # everything is cached and lazy: nothing to start
    assert not ts.host.running and ts.errors == {}
    (group,) = ts.groups()
    assert (group.id, group.name, group.defer) == ("mcp:docs", "docs", True)
    assert group.description == "Documentation search."
    assert group.instructions == "\nDocumentation search.\nMore text."
    assert [d.name for d in group.known] == ["docs__search", "docs__fetch"]
    assert all(d.group == "mcp:docs" and d.parameters == SCHEMA for d in group.known)
    assert ts.tools() == []


def test_servers_that_are_not_deferred_give_normal_tools(tmp_path: Path) -> None:
    cfg = McpServerConfig(name="clock", command="no-such-binary", defer=False, timeout=3)
    seed_cache(cfg, tmp_path, ["now"], instructions="Clock.")
    ts = McpToolset([cfg], tmp_path)
    assert ts.groups() == []
    (tool,) = ts.tools()
    assert tool.descriptor.name == "clock__now" and tool.timeout == 3
    assert ts.instructions() == {"clock": "Clock."}


# ----------------------------------------------------------------------------- messages


def test_targets_are_described_without_secrets() -> None:
    cfg = McpServerConfig(name="h", url="https://user:pw@example.com:8443/mcp?token=abc", headers={"X": "y"})
    assert describe_target(cfg) == "url: https://example.com:8443/mcp"
    cfg = McpServerConfig(name="s", command="npx", args=("-y", "server pkg"), env={"K": "secret"})
    assert describe_target(cfg) == "command: npx -y 'server pkg'"


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
