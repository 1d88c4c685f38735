"""The MCP servers of one runtime, built from cached listings: groups, eager tools, names."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

import greenroom.mcp
from greenroom._support.lazy import defined_in
from greenroom.config import McpServerConfig
from greenroom.mcp import McpError, McpListing, McpToolset, McpToolSpec, write_cached_listing


def test_toolset_naming_follows_config_order(tmp_path: Path, seed_cache: Callable[..., None]) -> None:
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


def test_groups_come_from_the_cache_without_starting_anything(
    tmp_path: Path, seed_cache: Callable[..., None], tool_schema: dict[str, Any]
) -> None:
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
    assert all(d.group == "mcp:docs" and d.parameters == tool_schema for d in group.known)
    assert ts.tools() == []


def test_servers_that_are_not_deferred_give_normal_tools(tmp_path: Path, seed_cache: Callable[..., None]) -> None:
    cfg = McpServerConfig(name="clock", command="no-such-binary", defer=False, timeout=3)
    seed_cache(cfg, tmp_path, ["now"], instructions="Clock.")
    ts = McpToolset([cfg], tmp_path)
    assert ts.groups() == []
    (tool,) = ts.tools()
    assert tool.descriptor.name == "clock__now" and tool.timeout == 3
    assert ts.instructions() == {"clock": "Clock."}


def test_a_schema_without_a_type_becomes_an_object_schema(tmp_path: Path, tool_schema: dict[str, Any]) -> None:
    # Anthropic refuses a request whose input_schema has no "type": "object" (OpenAI
    # wants an object schema too); servers that leave it out must not break every step
    cfg = McpServerConfig(name="loose", command="no-such-binary", defer=False)
    loose = {"properties": {"q": {"$ref": "#/$defs/Query"}}, "required": ["q"], "$defs": {"Query": {"type": "string"}}}
    specs = (McpToolSpec(name="find", input_schema=loose), McpToolSpec(name="ok", input_schema=tool_schema))
    write_cached_listing(cfg, tmp_path, McpListing(tools=specs))
    find, ok = McpToolset([cfg], tmp_path).tools()
    assert find.descriptor.parameters == {"type": "object", **loose}  # $defs and $ref kept
    assert ok.descriptor.parameters == tool_schema
    assert find.spec.input_schema == loose  # the listing keeps what the server said


def test_every_public_name_of_the_package_resolves() -> None:
    # names load on first use (so the config checks need no SDK): each must point at a real object
    for name in greenroom.mcp.__all__:
        # (defined_in: greenroom's own face may present a class as greenroom.NAME)
        assert defined_in(getattr(greenroom.mcp, name)).startswith("greenroom.mcp."), name
    assert set(greenroom.mcp.__all__) <= set(dir(greenroom.mcp))
    with pytest.raises(AttributeError):
        greenroom.mcp.NoSuchName  # noqa: B018
