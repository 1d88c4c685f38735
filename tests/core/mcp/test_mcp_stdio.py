"""MCP over stdio with real servers: mcp-server-time and mcp-server-git."""

from __future__ import annotations

import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from greenroom.config import McpServerConfig
from greenroom.mcp import McpServer, McpToolset, open_mcp_tools, read_cached_listing
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime
from greenroom.tools import ToolCallContext

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CTX = ToolCallContext(call_id="c1", run_id="r1", tool_name="t")


def git_config(repo: Path, **kw: Any) -> McpServerConfig:
    return McpServerConfig(
        name="git", command=sys.executable, args=("-m", "mcp_server_git", "--repository", str(repo)), **kw
    )


def tool_messages(session: Any) -> list[Any]:
    return [m for m in session.messages if m.role == "tool"]


async def test_time_server_lists_and_calls(tmp_path, time_config, pids, no_leftovers) -> None:
    server = McpServer(time_config(), tmp_path)
    try:
        listing = await server.start()
        tools = {t.descriptor.name: t for t in server.tools()}
        assert set(tools) == {"time__get_current_time", "time__convert_time"}
        tool = tools["time__get_current_time"]
        assert tool.descriptor.group == "mcp:time" and tool.mcp_name == "get_current_time"
        assert tool.descriptor.parameters["required"] == ["timezone"]
        assert tool.descriptor.description == "Get current time in a specific timezone"
        assert listing.server_name == "mcp-time"
        result = await tool.execute({"timezone": "Europe/Paris"}, CTX)
        assert not result.is_error
        assert result.structured["timezone"] == "Europe/Paris"
        assert '"timezone": "Europe/Paris"' in result.content
        converted = await tools["time__convert_time"].execute(
            {"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}, CTX
        )
        assert converted.structured["target"]["datetime"].endswith("21:00:00+09:00")
        assert len(pids("mcp_server_time")) == 1
    finally:
        await server.aclose()
    assert not server.connected


async def test_server_errors_and_greenroom_validation(tmp_path, time_config, no_leftovers) -> None:
    """Bad values are reported by the server; bad shapes never reach it (the runtime
    validates against the MCP inputSchema first)."""
    toolset = McpToolset([time_config(defer=False)], tmp_path)
    await toolset.prepare()
    turns = [
        {"tool_calls": [{"name": "time__get_current_time", "arguments": {"timezone": "Mars/Olympus"}}]},
        {"tool_calls": [{"name": "time__get_current_time", "arguments": {"zone": "UTC"}}]},
        {"tool_calls": [{"name": "time__get_current_time", "arguments": {"timezone": "UTC"}}]},
        {"text": "done"},
    ]
    rt = Runtime(model=ScriptedModel(turns), tools=toolset.tools(), host=make_plugin_host(records=[]))
    rt.on_close(toolset.aclose)
    try:
        session = rt.session()
        outcome = await session.run("what time is it?")
        # a direct call that skips greenroom's validation is refused by the server itself
        server = toolset.servers["time"]
        direct = await server.call_tool("get_current_time", {})
        unknown = await server.call_tool("no_such_tool", {})
    finally:
        await rt.aclose()
    assert outcome.stop_reason == "final"
    bad_value, bad_shape, good = tool_messages(session)
    assert bad_value.is_error and "Invalid timezone" in bad_value.content
    assert bad_shape.is_error and "invalid arguments for 'time__get_current_time'" in bad_shape.content
    assert "'timezone' is a required property" in bad_shape.content
    assert not good.is_error and '"timezone":"UTC"' in good.content
    assert toolset.servers["time"].starts == 1
    assert direct.is_error and "timezone" in direct.content
    assert unknown.is_error and "rejected the call to 'no_such_tool'" in unknown.content


async def test_listing_cache_builds_the_catalog_without_starting(tmp_path, time_config, pids, no_leftovers) -> None:
    cfg = time_config()
    groups, eager, close = await open_mcp_tools([cfg], tmp_path)  # nothing cached: lists the server
    await close()
    assert [d.name for d in groups[0].known] == ["time__get_current_time", "time__convert_time"]
    assert eager == [] and read_cached_listing(cfg, tmp_path) is not None
    before = set(pids("mcp_server_time"))

    toolset = McpToolset([cfg], tmp_path)  # a later process: the cache is enough
    await toolset.prepare()
    (group,) = toolset.groups()
    assert [d.name for d in group.known] == ["time__get_current_time", "time__convert_time"]
    assert group.known[0].parameters["required"] == ["timezone"]
    assert toolset.servers["time"].starts == 0 and not toolset.host.running
    assert set(pids("mcp_server_time")) == before
    try:
        loaded = await group.load()  # the loader starts the server
        assert [t.descriptor.name for t in loaded] == [d.name for d in group.known]
        assert toolset.servers["time"].starts == 1
        assert not (await loaded[0].execute({"timezone": "UTC"}, CTX)).is_error
    finally:
        await toolset.aclose()


async def test_a_killed_server_gives_one_error_then_restarts(tmp_path, time_config, pids, no_leftovers) -> None:
    server = McpServer(time_config(), tmp_path)
    try:
        await server.start()
        (pid,) = pids("mcp_server_time")
        os.kill(pid, signal.SIGKILL)
        crashed = await server.call_tool("get_current_time", {"timezone": "UTC"})
        assert crashed.is_error
        assert "MCP server 'time' closed the connection during the call to 'get_current_time'" in crashed.content
        assert "restarted on the next call" in crashed.content
        again = await server.call_tool("get_current_time", {"timezone": "UTC"})
        assert not again.is_error and again.structured["timezone"] == "UTC"
        assert server.starts == 2
        (new_pid,) = pids("mcp_server_time")
        assert new_pid != pid
    finally:
        await server.aclose()


async def test_a_hung_server_times_out_then_restarts(tmp_path, time_config, pids, no_leftovers) -> None:
    server = McpServer(time_config(timeout=1.0), tmp_path)
    stopped: list[int] = []
    try:
        await server.start()
        stopped = pids("mcp_server_time")
        os.kill(stopped[0], signal.SIGSTOP)  # alive but deaf
        t0 = time.monotonic()
        hung = await server.call_tool("get_current_time", {"timezone": "UTC"})
        assert hung.is_error and "did not answer the call to 'get_current_time' within 1 s" in hung.content
        assert time.monotonic() - t0 < 3
        again = await server.call_tool("get_current_time", {"timezone": "UTC"})  # probe fails -> restart
        assert not again.is_error, again.content
        assert server.starts == 2
    finally:
        await server.aclose()
        for pid in stopped:  # in case the test failed before the server was replaced
            with_suppressed_kill(pid)


def with_suppressed_kill(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


async def test_a_runtime_timeout_cancels_the_call_and_the_server_survives(tmp_path, time_config) -> None:
    server = McpServer(time_config(), tmp_path)
    try:
        await server.start()
        with anyio.move_on_after(0.001):  # the caller gives up (as the runtime's fail_after would)
            await server.call_tool("get_current_time", {"timezone": "UTC"})
        ok = await server.call_tool("get_current_time", {"timezone": "UTC"})  # probed, still alive
        assert not ok.is_error and server.starts == 1
    finally:
        await server.aclose()


async def test_secrets_in_env_stay_out_of_errors_and_logs(tmp_path, caplog) -> None:
    secret = "sk-live-0123456789abcdef"
    script = "import os, sys; print('token=' + os.environ['SERVICE_TOKEN'], file=sys.stderr); sys.exit(3)"
    cfg = McpServerConfig(name="leaky", command=sys.executable, args=("-c", script), env={"SERVICE_TOKEN": secret})
    toolset = McpToolset([cfg], tmp_path)
    with caplog.at_level(logging.DEBUG):
        await toolset.prepare()
        (group,) = toolset.groups()
        with pytest.raises(Exception) as info:
            await group.load()
        await toolset.aclose()
    err = toolset.errors["leaky"]
    assert err.startswith(f"MCP server 'leaky' failed to start (command: {sys.executable} -c ")
    assert "token=***" in err  # the server's stderr is quoted, redacted
    for text in (err, str(info.value), caplog.text):
        assert secret not in text
    assert group.known == [] and not group.loaded


async def test_git_server_with_a_real_repository(tmp_path, git_repo, no_leftovers) -> None:
    toolset = McpToolset([git_config(git_repo, naming="bare")], tmp_path)
    try:
        await toolset.prepare()
        (group,) = toolset.groups()
        names = [d.name for d in group.known]
        assert {"git_status", "git_log", "git_diff_unstaged"} <= set(names)
        tools = {t.descriptor.name: t for t in await group.load()}
        status = await tools["git_status"].execute({"repo_path": str(git_repo)}, CTX)
        assert not status.is_error and "main" in status.content
        log_ = await tools["git_log"].execute({"repo_path": str(git_repo), "max_count": 1}, CTX)
        assert "first commit" in log_.content
        (git_repo / "README.md").write_text("hello\nworld\n")
        diff = await tools["git_diff_unstaged"].execute({"repo_path": str(git_repo)}, CTX)
        assert "+world" in diff.content
        outside = await tools["git_status"].execute({"repo_path": str(tmp_path)}, CTX)
        assert outside.is_error and "outside" in outside.content
    finally:
        await toolset.aclose()


async def test_eager_start_and_blocking_prepare_from_a_running_loop(tmp_path, time_config, pids, no_leftovers) -> None:
    # build_runtime is synchronous and may run inside an event loop: prepare_blocking must
    # work there, and an eager server must be up when it returns
    toolset = McpToolset([time_config(start="eager")], tmp_path)
    toolset.prepare_blocking()
    try:
        assert toolset.servers["time"].connected and len(pids("mcp_server_time")) == 1
        result = await toolset.servers["time"].call_tool("get_current_time", {"timezone": "UTC"})
        assert not result.is_error
    finally:
        await toolset.aclose()


def test_sessions_outlive_event_loops(tmp_path, time_config, no_leftovers) -> None:
    """One runtime, several anyio.run calls (as the CLI does): the session survives."""
    toolset = McpToolset([time_config(defer=False)], tmp_path)
    toolset.prepare_blocking()  # nothing cached: lists the server
    tool = toolset.tools()[0]
    first = anyio.run(tool.execute, {"timezone": "UTC"}, CTX)
    second = anyio.run(tool.execute, {"timezone": "UTC"}, CTX)
    assert not first.is_error and not second.is_error
    assert toolset.servers["time"].starts == 1
    toolset.close()


async def test_a_deferred_server_through_the_deferred_tools_plugin(tmp_path, time_config, no_leftovers) -> None:
    """The wiring compose.py uses: the group in the catalog, load_tools, deferred_tool_call."""
    from greenroom.config import AgentConfig
    from greenroom_deferred import DeferredConfig, DeferredToolsPlugin

    toolset = McpToolset([time_config()], tmp_path)
    await toolset.prepare()  # nothing cached: lists the server for the catalog
    turns = [
        {"tool_calls": [{"name": "load_tools", "arguments": {"group_id": "mcp:time"}}]},
        {
            "tool_calls": [
                {
                    "name": "deferred_tool_call",
                    "arguments": {"tool_name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}},
                }
            ]
        },
        {"text": "It is late in Tokyo."},
    ]
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True))
    rt = Runtime(
        model=ScriptedModel(turns),
        tools=toolset.tools(),
        groups=toolset.groups(),
        host=make_plugin_host(records=[], extra=[plugin]),
        agent=AgentConfig(max_steps=5),
    )
    rt.on_close(toolset.aclose)
    try:
        session = rt.session()
        outcome = await session.run("time in Tokyo?")
    finally:
        await rt.aclose()
    assert outcome.stop_reason == "final"
    system = rt.model.requests[0].system_text
    assert "- `mcp:time` — time: Tools of the MCP server time (2 tools)" in system
    loaded, called = tool_messages(session)
    assert "time__convert_time" in loaded.content and not loaded.is_error
    assert not called.is_error and '"timezone":"Asia/Tokyo"' in called.content
    assert called.name == "time__get_current_time"


async def test_after_a_start_that_timed_out_the_next_call_fails_fast(tmp_path, no_leftovers) -> None:
    # a server that starts but never answers the handshake: each start costs connect_timeout,
    # so the back-off (1 s after the failure) must spare the next call another wait
    starts = tmp_path / "starts"
    script = f"import time; open({str(starts)!r}, 'a').write('x'); time.sleep(60)"
    cfg = McpServerConfig(
        name="mute", command=sys.executable, args=("-c", "# mcp_server\n" + script), connect_timeout=1.5
    )
    server = McpServer(cfg, tmp_path)
    try:
        first = await server.call_tool("anything", {})
        second = await server.call_tool("anything", {})
    finally:
        await server.aclose()
    assert "no answer within 1.5 s (connect_timeout)" in first.content
    assert second.is_error and second.content == first.content
    assert starts.read_text() == "x"  # the second call did not start the server again
