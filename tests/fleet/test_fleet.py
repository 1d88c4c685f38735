"""Two ``greenroom serve`` replicas behind HAProxy, one PostgreSQL store (the local fleet
of deploy/local): every replica answers a caller alike; clients of both MCP revisions
keep calling through the balancer while one replica is SIGKILLed; HAProxy takes it out
of the rotation, the calls in flight on it reach their clients as errors, and every
call a client saw succeed is counted in PostgreSQL (with at most the calls whose answers
the kill cut off), the same before and after the dead replica's runs are swept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import anyio
import mcp_types as t
import pytest
from fleet_testutil import Tally, caller, fleet_config, load_fleet, needs_fleet
from mcp.client.client import Client

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLIENTS, CALLS, KILL_AFTER = 12, 25, 60


def priors_totals(url: str, agent: str, env: dict[str, str]) -> dict[str, int]:
    """What ``greenroom priors show --json`` says each tool was called, exactly."""
    done = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "priors", "show", agent, "--json", "--store", url],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return {entry["tool"]: entry["total"] for entry in json.loads(done.stdout)["tools"] if entry["total"]}


def sweep(url: str, env: dict[str, str]) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "priors", "sweep", "--store", url, "--stale", "0"],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return done.stdout


async def answers(url: str) -> tuple[list[str], str]:
    """What a new caller is offered, and what a search finds, on one replica."""
    async with Client(url, mode="2026-07-28") as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        found = await client.call_tool("ToolSearch", {"query": "current time in a timezone"})
        text = "".join(b.text for b in found.content if isinstance(b, t.TextContent))
        return listed, text


async def test_a_replica_killed_mid_load_loses_no_call_from_the_priors(tmp_path: Path) -> None:
    url = needs_fleet()
    fleet_module = load_fleet()
    agent = f"fleet-{uuid.uuid4().hex[:10]}"
    env = {**os.environ, "GREENROOM_PRIORS_URL": url, "GREENROOM_HOME": str(tmp_path / "home")}
    tally = Tally()
    with fleet_module.Fleet(fleet_config(tmp_path, agent), 2, env=env, folder=tmp_path / "fleet") as fleet:
        first, second = fleet.replicas
        assert await answers(first.url) == await answers(second.url)  # no replica answers otherwise
        killed = anyio.Event()

        async def kill_once_enough_succeeded() -> None:
            if not killed.is_set() and tally.succeeded >= KILL_AFTER:
                killed.set()
                await anyio.to_thread.run_sync(first.kill)

        async def client(i: int) -> None:
            mode = "legacy" if i % 3 == 0 else "2026-07-28"  # a third keep a session
            await caller(fleet.url, CALLS, tally, mode=mode, name=f"client-{i}", on_call=kill_once_enough_succeeded)

        async with anyio.create_task_group() as tg:
            for i in range(CLIENTS):
                tg.start_soon(client, i)
        assert killed.is_set()
        fleet.wait_out_of_rotation(first)
        assert tally.succeeded + len(tally.errors) == CLIENTS * CALLS  # every call ended, none hung
        assert tally.succeeded > CLIENTS * CALLS * 0.8, tally.errors[:5]
        # while the survivor still holds its runs, the journal has their calls already:
        # every call a client saw succeed, and the ones that ran on the dead replica
        # whose answers the kill cut off (journaled before answering: never fewer)
        counted = priors_totals(url, agent, env)
        assert counted.pop("ToolSearch") == 2  # the two searches above
        (tool,) = tally.ok
        cut_off = counted.pop(tool) - tally.ok[tool]
        assert not counted and 0 <= cut_off <= len(tally.errors), (cut_off, tally.errors)
    exact = {tool: tally.ok[tool] + cut_off, "ToolSearch": 2}
    # the survivor drained and ended its runs; the dead replica's runs are still journaled
    assert priors_totals(url, agent, env) == exact
    assert "folded" in sweep(url, env)
    assert priors_totals(url, agent, env) == exact  # folded once, not again
