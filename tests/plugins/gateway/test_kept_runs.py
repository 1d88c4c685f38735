"""A sessionless caller's kept run is never ended under a request that is using it: when
it is spent while requests of the caller are in flight (parallel calls, many clients
without a name), new requests get a new run and the old one ends when the last request
holding it is done. Before, those requests failed with "Internal server error"."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.client import Client
from support.serve_testutil import HttpGateway

from greenroom_gateway.sessions import Limits, LogicalRuns

pytestmark = pytest.mark.anyio

DISPATCH = "deferred_tool_call"
NOW = {"tool_name": "time__get_current_time", "arguments": {"timezone": "UTC"}}


class Run:
    """What LogicalRuns reads of a run: how many calls it made."""

    def __init__(self) -> None:
        self.calls_made = 0


async def test_a_spent_run_ends_only_when_the_last_request_holding_it_lets_go() -> None:
    ended: list[Any] = []

    async def end(run: Any) -> None:
        ended.append(run)

    runs = LogicalRuns(end, Limits(calls=2))
    first = await runs.lease("*", Run)  # type: ignore[arg-type]
    second = await runs.lease("*", Run)  # type: ignore[arg-type]
    assert first.run is second.run
    first.run.calls_made = 2  # spent while both requests hold it
    third = await runs.lease("*", Run)  # type: ignore[arg-type]
    assert third.run is not first.run and not ended  # a new run for the new request; the old one waits
    await runs.release(first)
    assert not ended
    await runs.release(second)
    assert ended == [first.run]
    await runs.release(third)
    assert ended == [first.run]  # the new run is kept


async def test_many_callers_at_once_across_run_ends_get_no_error(
    make_config: Callable[..., Path], http_gateway: Callable[..., HttpGateway]
) -> None:
    gateway = http_gateway(make_config(), env={"GREENROOM_SERVE_SESSION_CALLS": "3"})
    failures: list[str] = []

    async def client() -> None:
        async with Client(gateway.url, mode="2026-07-28") as c:  # no name: every client is one caller
            for _ in range(6):
                try:
                    result = await c.call_tool(DISPATCH, NOW)
                except Exception as exc:
                    failures.append(f"{type(exc).__name__}: {exc}")
                    continue
                if result.is_error:
                    failures.append(str(result.content))

    async with anyio.create_task_group() as tg:
        for _ in range(12):
            tg.start_soon(client)
    assert failures == []
    assert gateway.stop() == 0
