"""MCP pieces that need no server: result mapping, naming, cache, redaction, groups from cache."""

from __future__ import annotations

import json
import logging
import re
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


def test_long_names_are_shortened_to_what_providers_accept() -> None:
    # OpenAI refuses a request whose tools array has a name over 64 characters (and the
    # MCP spec allows tool names up to 128), so one long tool would break every step
    namer = ToolNamer()
    server = "github-enterprise-cloud"
    tools = ["list_pull_request_review_comments_for_repository", "list_pull_request_review_comments_for_repositories"]
    names = [namer.name(server, t, "prefixed") for t in tools]
    bare = namer.name("x", "t" * 128, "bare")
    for name in (*names, bare):
        assert re.fullmatch(r"[A-Za-z0-9_-]{1,64}", name), name
    assert names[0] != names[1]  # still two tools
    assert names[0].startswith("github-enterprise-cloud__list_pull_request_review_comme")
    assert [namer.name(server, t, "prefixed") for t in tools] == names  # stable
    assert namer.name("time", "get_current_time", "prefixed") == "time__get_current_time"  # short ones unchanged


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


def test_a_schema_without_a_type_becomes_an_object_schema(tmp_path: Path) -> None:
    # Anthropic refuses a request whose input_schema has no "type": "object" (OpenAI
    # wants an object schema too); servers that leave it out must not break every step
    cfg = McpServerConfig(name="loose", command="no-such-binary", defer=False)
    loose = {"properties": {"q": {"$ref": "#/$defs/Query"}}, "required": ["q"], "$defs": {"Query": {"type": "string"}}}
    specs = (McpToolSpec(name="find", input_schema=loose), McpToolSpec(name="ok", input_schema=SCHEMA))
    write_cached_listing(cfg, tmp_path, McpListing(tools=specs))
    find, ok = McpToolset([cfg], tmp_path).tools()
    assert find.descriptor.parameters == {"type": "object", **loose}  # $defs and $ref kept
    assert ok.descriptor.parameters == SCHEMA
    assert find.spec.input_schema == loose  # the listing keeps what the server said


# ----------------------------------------------------------------------------- messages


def test_targets_are_described_without_secrets() -> None:
    cfg = McpServerConfig(name="h", url="https://user:pw@example.com:8443/mcp?token=abc", headers={"X": "y"})
    assert describe_target(cfg) == "url: https://example.com:8443/mcp"
    assert describe_target(McpServerConfig(name="v6", url="http://[::1]:8000/mcp?k=v")) == "url: http://[::1]:8000/mcp"
    cfg = McpServerConfig(name="s", command="npx", args=("-y", "server pkg"), env={"K": "secret"})
    assert describe_target(cfg) == "command: npx -y 'server pkg'"


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


@pytest.mark.parametrize("text", ["[]", "null", '"tools"', '{"format": "greenroom.mcp-cache/1", "tools": {"a": 1}}'])
def test_a_cache_file_of_the_wrong_shape_is_ignored(
    tmp_path: Path, gr_home: Path, text: str, caplog: pytest.LogCaptureFixture
) -> None:
    cfg = McpServerConfig(name="s", command="srv")
    path = cache_path(cfg, tmp_path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    assert read_cached_listing(cfg, tmp_path) is None
    toolset = McpToolset([cfg], tmp_path)  # building the runtime does not crash on it
    assert toolset.servers["s"].listing is None and toolset.tools() == []
