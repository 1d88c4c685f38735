"""Two ``greenroom serve`` replicas behind HAProxy, one PostgreSQL store (the local fleet
of deploy/local): every replica answers a caller alike; clients of both MCP revisions
keep calling through the balancer while one replica is SIGKILLed; HAProxy takes it out
of the rotation, the calls in flight on it reach their clients as errors, and every
call a client saw succeed is counted in PostgreSQL but those of the dead replica's last
checkpoint interval (and with at most the calls whose answers the kill cut off), the same
before and after the dead replica's runs are swept."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import anyio
import mcp_types as t
import pytest
from mcp.client.client import Client
from support.fleet_testutil import Tally, caller, fleet_config, load_fleet, needs_fleet

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

CLIENTS, CALLS, KILL_AFTER = 12, 25, 60
CHECKPOINT = "checkpoint_every = 1\ncheckpoint_calls = 1\n"  # seconds; a checkpoint behind every call


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
    succeeded: list[tuple[float, int]] = []  # (when, how many calls had succeeded then)
    config = fleet_config(tmp_path, agent, CHECKPOINT)
    with fleet_module.Fleet(config, 2, env=env, folder=tmp_path / "fleet") as fleet:
        first, second = fleet.replicas
        assert await answers(first.url) == await answers(second.url)  # no replica answers otherwise
        killed = anyio.Event()

        async def kill_once_enough_succeeded() -> None:
            succeeded.append((time.monotonic(), tally.succeeded))
            if not killed.is_set() and tally.succeeded >= KILL_AFTER:
                killed.set()
                await anyio.to_thread.run_sync(first.kill)
                succeeded.append((time.monotonic(), -1))  # the kill

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
    # the survivor drained and ended its runs; the dead replica's runs are in the journal
    # up to its last checkpoint: what the clients saw succeed, but the calls of its last
    # interval (at most every call that succeeded in the two seconds before the kill), and
    # with the calls that ran on it but whose answers the kill cut off
    counted = priors_totals(url, agent, env)
    assert counted.pop("ToolSearch") == 2  # the two searches above
    (tool,) = tally.ok
    off = counted.pop(tool) - tally.ok[tool]
    kill = next(when for when, n in succeeded if n < 0)
    at_kill = max(n for when, n in succeeded if when <= kill)
    window = at_kill - max((n for when, n in succeeded if when < kill - 2), default=0)
    assert not counted and -window <= off <= len(tally.errors), (off, window, tally.errors)
    exact = {tool: tally.ok[tool] + off, "ToolSearch": 2}
    assert "folded" in sweep(url, env)
    assert priors_totals(url, agent, env) == exact  # folded once, not again
