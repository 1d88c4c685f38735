"""An HTTP gateway stops on SIGTERM and on Ctrl-C (SIGINT) whatever its clients hold open:
it takes no new request (503, and ``/readyz`` says 503 so a load balancer drains it),
lets the calls in progress finish within ``--drain-timeout`` (cancelling those still
running past it, whose clients get an error result), ends every open event stream (a
2025-11-25 GET stream, a 2026-07-28 ``subscriptions/listen``), ends every client's run
(what was learned is saved) and exits 0."""

from __future__ import annotations

import inspect
import signal
import subprocess
import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as t
import pytest
from mcp.client.client import Client
from support.serve_testutil import HttpGateway, hold_config, http_client, priors_sessions

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
REVISION = "2025-11-25"


def text(result: t.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, t.TextContent))


@asynccontextmanager
async def event_stream(http: httpx2.AsyncClient, url: str) -> AsyncIterator[Any]:
    """A 2025-11-25 session whose GET event stream is open (the gateway answered it) until
    the block ends; its client makes no call."""
    hello = {"protocolVersion": REVISION, "capabilities": {}, "clientInfo": {"name": "watcher", "version": "1"}}
    opened = await http.post(
        url, json={"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello}, headers=ACCEPT
    )
    assert opened.status_code == 200, opened.text
    session = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": REVISION}
    done = await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers={**ACCEPT, **session}
    )
    assert done.status_code == 202
    async with http.stream("GET", url, headers={"accept": "text/event-stream", **session}) as stream:
        assert stream.status_code == 200
        yield stream


async def until(predicate: Callable[[], Any], within: float = 30.0) -> None:
    """Wait for ``predicate`` (plain or async) to hold, checked each loop turn; fail past ``within``."""
    with anyio.fail_after(within):
        while True:
            held = predicate()
            if inspect.isawaitable(held):
                held = await held
            if held:
                return
            await anyio.sleep(0.02)


async def exit_code(proc: subprocess.Popen[bytes], within: float) -> int | None:
    def wait() -> int | None:
        try:
            return proc.wait(within)
        except subprocess.TimeoutExpired:
            return None

    return await anyio.to_thread.run_sync(wait)


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
async def test_a_call_in_progress_finishes_while_streams_are_held_open(
    tmp_path: Path, gr_home: Path, signum: signal.Signals
) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    gw = HttpGateway(hold_config(tmp_path), "--drain-timeout", "120", env={"HOLD_DIR": str(marks)})
    base = gw.url.removesuffix("/mcp")
    outcome: dict[str, Any] = {}
    try:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(60.0)) as http,
            event_stream(http, gw.url) as stream,  # an idle client holding its GET stream
            Client(gw.url, mode="2026-07-28") as modern,
            modern.listen(tools_list_changed=True),  # and a 2026-07-28 client listening
            http_client(gw.url) as caller,  # the SDK's client (it holds a GET stream too)
            anyio.create_task_group() as tg,
        ):
            assert text(await caller.call_tool("echo", {"text": "hi"})) == "hi"

            async def call() -> None:
                outcome["result"] = await caller.call_tool("hold", {"tag": "inflight"})

            tg.start_soon(call)
            await until(lambda: (marks / "started-inflight").exists())
            started = time.monotonic()
            gw.proc.send_signal(signum)

            async def stopping() -> bool:
                return (await http.get(f"{base}/readyz")).status_code == 503

            await until(stopping)  # a load balancer takes this replica out ...
            assert (await http.get(f"{base}/readyz")).json()["status"] == "stopping"
            assert (await http.get(f"{base}/healthz")).json() == {"status": "alive"}  # ... it is alive
            refused = await http.post(gw.url, json={"jsonrpc": "2.0", "id": 9, "method": "ping"}, headers=ACCEPT)
            assert refused.status_code == 503
            assert "stopping" in refused.json()["error"]["message"]
            assert gw.proc.poll() is None  # still finishing the call

            (marks / "release").write_text("go")
            await until(lambda: "result" in outcome)
            assert not outcome["result"].is_error and text(outcome["result"]) == "released inflight"
            assert await exit_code(gw.proc, 60) == 0
            assert time.monotonic() - started < 60
            with anyio.fail_after(10):
                async for _ in stream.aiter_bytes():  # the idle client's stream ended, cleanly
                    pass
            tg.cancel_scope.cancel()
    finally:
        gw.stop()
    assert priors_sessions(gr_home) == 1  # the caller's run ended: what it learned is kept


async def test_calls_past_the_drain_timeout_are_cancelled_with_an_error(tmp_path: Path, gr_home: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    gw = HttpGateway(hold_config(tmp_path), "--drain-timeout", "1", env={"HOLD_DIR": str(marks)})
    results: list[t.CallToolResult] = []
    try:
        async with (
            httpx2.AsyncClient(timeout=httpx2.Timeout(60.0)) as http,
            event_stream(http, gw.url),
            http_client(gw.url) as caller,
            anyio.create_task_group() as tg,
        ):
            assert text(await caller.call_tool("echo", {"text": "hi"})) == "hi"

            async def call(tag: str) -> None:
                results.append(await caller.call_tool("hold", {"tag": tag}))

            for i in range(3):
                tg.start_soon(call, f"never{i}")
            await until(lambda: all((marks / f"started-never{i}").exists() for i in range(3)))
            started = time.monotonic()
            gw.proc.send_signal(signal.SIGINT)  # Ctrl-C; the calls are never released
            await until(lambda: len(results) == 3)
            assert await exit_code(gw.proc, 60) == 0
            assert time.monotonic() - started < 1 + 30  # the bound, plus closing and RunEnd
            tg.cancel_scope.cancel()
    finally:
        gw.stop()
    for result in results:
        assert result.is_error
        assert "drain timeout" in text(result) and "cancelled" in text(result)
    assert priors_sessions(gr_home) == 1
