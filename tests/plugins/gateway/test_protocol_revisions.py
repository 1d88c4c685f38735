"""The gateway under both MCP revisions a client may speak: 2025-11-25 (initialize, one
session per connection) and 2026-07-28 (no sessions), over stdio and HTTP, with the
SDK's own client in each mode; honest cache hints, bounded pages, a sessionless
caller's calls kept as one session, and list changes through ``subscriptions/listen``."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as t
import pytest
from mcp import StdioServerParameters
from mcp.client.client import Client
from support.serve_testutil import HttpGateway, priors_sessions, serve_argv, wait_until

pytestmark = pytest.mark.anyio

SEARCH, DISPATCH = "ToolSearch", "deferred_tool_call"
MODES = ["legacy", "2026-07-28"]
NOW = {"tool_name": "time__get_current_time", "arguments": {"timezone": "UTC"}}


@asynccontextmanager
async def connect(transport: str, config: Path, mode: str, gateways: Callable[..., HttpGateway]) -> AsyncIterator[Any]:
    if transport == "http":
        target: Any = gateways(config).url
    else:
        argv = serve_argv(config)
        target = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(target, mode=mode) as client:
        yield client


def text(result: t.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, t.TextContent))


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("mode", MODES)
async def test_both_revisions_list_search_and_call(
    make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway], transport: str, mode: str
) -> None:
    async with connect(transport, make_config(), mode, http_gateway) as client:
        assert client.protocol_version == ("2025-11-25" if mode == "legacy" else mode)
        listed = await client.list_tools()
        names = [x.name for x in listed.tools]
        assert SEARCH in names and DISPATCH in names
        assert (await client.list_tools()).tools == listed.tools  # the same, in the same order
        if mode != "legacy":
            # the same for every caller and stable until the learned placement is revised
            assert (listed.ttl_ms, listed.cache_scope) == (300_000, "public")
        found = await client.call_tool(SEARCH, {"query": "current time in a timezone"})
        assert "time__get_current_time" in text(found)
        now = await client.call_tool(DISPATCH, NOW)
        assert not now.is_error and "UTC" in text(now)


def big_catalog(tmp_path: Path, count: int) -> Path:
    lines = [
        json.dumps({"name": f"tool_{i:05d}", "description": f"Tool number {i}.", "parameters": None})
        for i in range(count)
    ]
    catalog = tmp_path / "catalog.jsonl"
    catalog.write_text("\n".join(lines) + "\n", encoding="utf-8")
    config = tmp_path / "eager.toml"
    config.write_text(
        '[agent]\nid = "gw"\n[tools]\ncatalogs = ["catalog.jsonl"]\n[plugins.deferred-tools]\nenabled = false\n',
        encoding="utf-8",
    )
    return config


@pytest.mark.parametrize("mode", MODES)
async def test_tools_list_comes_in_bounded_pages(tmp_path: Path, gr_home: Path, mode: str) -> None:
    config = big_catalog(tmp_path, 1234)
    async with connect("stdio", config, mode, lambda c: None) as client:
        names: list[str] = []
        cursor = None
        pages = 0
        while True:
            listed = await client.list_tools(cursor=cursor, cache_mode="refresh")
            assert len(listed.tools) <= 500
            names += [x.name for x in listed.tools]
            pages += 1
            cursor = listed.next_cursor
            if cursor is None:
                break
        assert pages == 3 and names == [*(f"tool_{i:05d}" for i in range(1234)), "read_result"]
        with pytest.raises(Exception, match="invalid cursor"):
            await client.list_tools(cursor="made-up", cache_mode="refresh")


async def test_a_sessionless_callers_calls_are_one_session(
    make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway], gr_home: Path
) -> None:
    gateway = http_gateway(make_config())
    async with Client(gateway.url, mode="2026-07-28") as client:
        for _ in range(3):  # three requests, three fresh connections on this revision
            assert not (await client.call_tool(DISPATCH, NOW)).is_error
    assert gateway.stop() == 0  # the gateway ends the caller's run: what it learned is kept
    assert priors_sessions(gr_home) == 1


async def test_the_config_says_how_long_a_callers_run_is_kept_in_a_bare_environment(
    make_config: Callable[..., Path], tmp_path: Path
) -> None:
    # a client starts the gateway without GREENROOM_SERVE_SESSION_* (or GREENROOM_HOME):
    # the [serve] keys and --home say it instead
    state = tmp_path / "state"
    argv = serve_argv(make_config("[serve]\nsession_calls = 2\n"), "--home", str(state))
    bare = {"PATH": os.environ.get("PATH", ""), "HOME": str(tmp_path / "home")}
    async with Client(StdioServerParameters(command=argv[0], args=argv[1:], env=bare), mode="2026-07-28") as client:
        for _ in range(4):
            assert not (await client.call_tool(DISPATCH, NOW)).is_error
    # a run per two calls, both ended when the gateway stopped
    assert wait_until(lambda: priors_sessions(state) == 2)


async def test_a_changed_tool_list_reaches_listeners(
    make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway], monkeypatch: pytest.MonkeyPatch
) -> None:
    # the caller's run ends after 5 calls; the next one places the tool it used eager
    monkeypatch.setenv("GREENROOM_SERVE_SESSION_CALLS", "5")
    gateway = http_gateway(make_config())
    async with Client(gateway.url, mode="2026-07-28") as client:
        before = [x.name for x in (await client.list_tools()).tools]
        assert "time__get_current_time" not in before
        async with client.listen(tools_list_changed=True) as sub:
            for _ in range(5):
                assert not (await client.call_tool(DISPATCH, NOW)).is_error
            after = [x.name for x in (await client.list_tools(cache_mode="refresh")).tools]
            assert "time__get_current_time" in after
            with anyio.fail_after(30):
                event = await sub.__anext__()
            assert type(event).__name__ == "ToolsListChanged"


async def test_what_each_caller_was_listed_is_kept_for_a_bounded_number_of_callers(
    make_runtime: Callable[..., Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    import greenroom_gateway.gateway as gateway_module
    from greenroom_gateway.clients import ClientView
    from greenroom_gateway.gateway import Gateway

    monkeypatch.setattr(gateway_module, "MAX_CALLERS", 3)
    gateway = Gateway(make_runtime([]))

    class Run:  # what the gateway reads of a kept run
        view = ClientView((), "")

    for i in range(10):
        await gateway._first_view(f"caller-{i}", Run())  # type: ignore[arg-type]
    assert list(gateway.last_listed) == ["caller-7", "caller-8", "caller-9"]
