"""``greenroom serve --transport http``: many clients at once, each with its own found
tools, one runtime between them; a bearer token when asked for; priors from all of them."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import anyio
import httpx2
import mcp_types as t
import pytest
from support.serve_testutil import HttpGateway, http_client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


async def names(client: object) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}  # type: ignore[attr-defined]


async def test_two_clients_do_not_see_each_others_found_tools(
    make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway]
) -> None:
    gw = http_gateway(make_config(strategy="inject", agent_id="shared"))
    async with http_client(gw.url) as alice, http_client(gw.url) as bob:
        assert "ToolSearch" in await names(alice) and "ToolSearch" in await names(bob)
        await alice.call_tool("ToolSearch", {"query": "current time in a time zone"})
        assert "time__get_current_time" in await names(alice)
        assert "time__get_current_time" not in await names(bob)
        await bob.call_tool("ToolSearch", {"query": "show the git commit log"})
        assert "git__git_log" in await names(bob)
        assert "git__git_log" not in await names(alice)
        # both at once, through the one runtime and its upstream servers
        results: dict[str, t.CallToolResult] = {}

        async def call(who: str, client: object, tz: str) -> None:
            results[who] = await client.call_tool("time__get_current_time", {"timezone": tz})  # type: ignore[attr-defined]

        await alice.call_tool("ToolSearch", {"query": "current time"})
        async with anyio.create_task_group() as tg:
            tg.start_soon(call, "alice", alice, "Asia/Tokyo")
            tg.start_soon(call, "bob", bob, "America/Lima")  # not found by bob: still callable by name
        assert "Asia/Tokyo" in results["alice"].content[0].text  # type: ignore[union-attr]
        assert "America/Lima" in results["bob"].content[0].text  # type: ignore[union-attr]
    assert gw.stop() == 0
    exported = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "priors", "export", "shared"], capture_output=True, text=True
    )
    assert exported.returncode == 0, exported.stderr
    assert json.loads(exported.stdout)  # the calls of both clients were learned from
    assert "time__get_current_time" in exported.stdout


async def test_bearer_token_is_required_when_asked_for(
    make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway]
) -> None:
    gw = http_gateway(make_config(), "--token-env", "GW_TOKEN", env={"GW_TOKEN": "s3cret-token"})
    body = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    headers = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
    async with httpx2.AsyncClient() as http:
        bare = await http.post(gw.url, json=body, headers=headers)
        assert bare.status_code == 401
        wrong = await http.post(gw.url, json=body, headers={**headers, "Authorization": "Bearer nope"})
        assert wrong.status_code == 401
    async with http_client(gw.url, token="s3cret-token") as client:
        assert "ToolSearch" in await names(client)


def test_token_env_must_be_set(make_config: Callable[..., Path]) -> None:
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "greenroom.cli",
            "serve",
            str(make_config()),
            "--transport",
            "http",
            "--token-env",
            "GW_UNSET_VAR",
        ],
        capture_output=True,
        text=True,
    )
    assert run.returncode == 2 and "GW_UNSET_VAR" in run.stderr
