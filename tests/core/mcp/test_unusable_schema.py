"""An MCP tool whose cached listing carries an invalid input schema: reported by name when
the runtime is built, kept out of what the model sees and of ToolSearch, and answered
with its problem when called. No server needs to run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from greenroom import events as ev
from greenroom.config import McpServerConfig
from greenroom.mcp import McpListing, McpToolset, McpToolSpec, write_cached_listing
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime

BAD = {"type": "object", "properties": {"when": {"type": "string", "pattern": "(unclosed"}}}


def seed(cfg: McpServerConfig, base: Path, tool_schema: dict[str, Any]) -> None:
    specs = (McpToolSpec(name="parse", input_schema=BAD), McpToolSpec(name="now", input_schema=tool_schema))
    write_cached_listing(cfg, base, McpListing(tools=specs, listed_at=1.0))


@pytest.mark.anyio
async def test_an_eager_server_tool_with_a_bad_schema_answers_its_problem_without_starting(
    tmp_path: Path, tool_schema: dict[str, Any]
) -> None:
    cfg = McpServerConfig(name="clock", command="no-such-binary", defer=False)
    seed(cfg, tmp_path, tool_schema)
    toolset = McpToolset([cfg], tmp_path)
    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    turns = [{"tool_calls": [{"name": "clock__parse", "arguments": {"when": "now"}}]}, {"text": "ok"}]
    rt = Runtime(model=ScriptedModel(turns), tools=toolset.tools(), host=make_plugin_host(records=[]), events=bus)
    try:
        (warned,) = [e for e in seen if isinstance(e, ev.ToolUnusable)]
        assert (warned.tool, warned.fault, warned.where) == ("clock__parse", "bad_pattern", "#/properties/when/pattern")
        s = rt.session()
        assert (await s.run("what time is it")).stop_reason == "final"
        (result,) = [m for m in s.messages if m.role == "tool"]
        assert result.is_error and "'(unclosed' is not a valid regular expression" in result.content
        assert [t.name for t in rt.model.requests[0].tools] == ["clock__now"]
        assert not toolset.host.running  # nothing was started to find or answer the problem
    finally:
        await toolset.aclose()


@pytest.mark.anyio
async def test_a_deferred_server_tool_with_a_bad_schema_is_reported_and_never_found(
    tmp_path: Path, tool_schema: dict[str, Any]
) -> None:
    from greenroom_deferred import DeferredConfig, DeferredToolsPlugin

    cfg = McpServerConfig(name="clock", command="no-such-binary")
    seed(cfg, tmp_path, tool_schema)
    toolset = McpToolset([cfg], tmp_path)
    seen: list[ev.Event] = []
    bus = ev.EventBus()
    bus.subscribe(seen.append)
    turns = [
        {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "clock parse now"}}]},
        {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": ""}}]},
        {"text": "ok"},
    ]
    host = make_plugin_host(records=[], extra=[DeferredToolsPlugin(DeferredConfig(enabled=True))])
    rt = Runtime(model=ScriptedModel(turns), host=host, events=bus, groups=toolset.groups())
    try:
        assert [(e.tool, e.fault) for e in seen if isinstance(e, ev.ToolUnusable)] == [("clock__parse", "bad_pattern")]
        s = rt.session()
        assert (await s.run("what time is it")).stop_reason == "final"
        search, browse = [m.content for m in s.messages if m.role == "tool"]
        assert "clock__now" in search and "clock__parse" not in search
        assert "clock__now" in browse and "clock__parse" not in browse
        assert not toolset.host.running
    finally:
        await toolset.aclose()
