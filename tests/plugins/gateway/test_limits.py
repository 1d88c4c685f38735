"""The limits that protect a gateway process, each with a clear error when hit: a request
body over ``--max-body-bytes`` is answered 413 naming the limit (never held in memory);
a client past ``--max-calls-per-client`` calls in progress gets an error result at once
(never a queue), other clients unaffected; an upstream MCP server gets at most
``max_concurrency`` calls at once, the others wait within their timeout, then fail naming
the server and the limit."""

from __future__ import annotations

import socket
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as t
import pytest
from support.serve_testutil import HOLD_SERVER, HttpGateway, hold_config, http_client

from greenroom.config import McpServerConfig
from greenroom.mcp.toolset import McpToolset
from greenroom.tools import ToolCallContext

pytestmark = pytest.mark.anyio

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
MIB = 1024 * 1024


def text(result: t.CallToolResult) -> str:
    return "".join(b.text for b in result.content if isinstance(b, t.TextContent))


async def until(predicate: Any, within: float = 30.0) -> None:
    """Wait until ``predicate()`` holds (checked each loop turn); fail past ``within``."""
    with anyio.fail_after(within):
        while not predicate():
            await anyio.sleep(0.02)


@pytest.fixture
def marks(tmp_path: Path) -> Path:
    folder = tmp_path / "marks"
    folder.mkdir()
    return folder


@pytest.mark.slow
async def test_a_body_over_the_limit_is_413_naming_it(tmp_path: Path, gr_home: Path, marks: Path) -> None:
    gw = HttpGateway(hold_config(tmp_path), "--max-body-bytes", str(MIB), env={"HOLD_DIR": str(marks)})
    try:
        padded = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"pad": "' + b"x" * (2 * MIB) + b'"}}'

        async def chunks() -> AsyncIterator[bytes]:  # no Content-Length: read until past the limit
            for _ in range(3 * 16):
                yield b"x" * (64 * 1024)

        async with httpx2.AsyncClient(timeout=httpx2.Timeout(60.0)) as http:
            for body in (padded, chunks()):
                answer = await http.post(gw.url, content=body, headers=ACCEPT)
                assert answer.status_code == 413
                error = answer.json()["error"]
                assert error["code"] == -32600
                assert "too large" in error["message"] and f"--max-body-bytes {MIB}" in error["message"]
            assert (await http.get(gw.url.replace("/mcp", "/readyz"))).status_code == 200

        # a client that says it sends 1 GiB and waits: answered at once, nothing read
        def declare_a_gibibyte() -> bytes:
            with socket.create_connection(("127.0.0.1", gw.port), timeout=30) as conn:
                head = f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{gw.port}\r\nContent-Type: application/json\r\n"
                conn.sendall((head + f"Content-Length: {1024 * MIB}\r\n\r\n").encode())
                said = b""
                while chunk := conn.recv(65536):  # the answer, then the gateway closes
                    said += chunk
                return said

        said = await anyio.to_thread.run_sync(declare_a_gibibyte)
        assert said.startswith(b"HTTP/1.1 413") and b"--max-body-bytes" in said

        # under the limit, a large call goes through (its echo is cut to max_result_tokens)
        async with http_client(gw.url) as client:
            echoed = await client.call_tool("echo", {"text": "y" * (MIB // 2)})
            assert not echoed.is_error and "yyyy" in text(echoed)
    finally:
        assert gw.stop() == 0


@pytest.mark.slow
async def test_calls_past_a_clients_limit_are_refused_at_once(tmp_path: Path, gr_home: Path, marks: Path) -> None:
    clients, each, limit = 12, 3, 2
    gw = HttpGateway(hold_config(tmp_path), "--max-calls-per-client", str(limit), env={"HOLD_DIR": str(marks)})
    results: dict[int, list[t.CallToolResult]] = {i: [] for i in range(clients)}

    async def client(i: int) -> None:
        async with http_client(gw.url) as session, anyio.create_task_group() as tg:

            async def call(j: int) -> None:
                results[i].append(await session.call_tool("hold", {"tag": f"{i}-{j}"}))

            for j in range(each):
                tg.start_soon(call, j)

    def refused() -> list[t.CallToolResult]:
        return [r for rs in results.values() for r in rs if r.is_error]

    try:
        async with anyio.create_task_group() as tg:
            for i in range(clients):
                tg.start_soon(client, i)
            # every client's call past its limit comes back while its others still hold:
            # nothing waits in a queue for a slot
            await until(lambda: len(refused()) == clients * (each - limit), within=60)
            await until(lambda: len(list(marks.glob("started-*"))) == clients * limit, within=60)
            for result in refused():
                assert "too many calls at once" in text(result)
                assert f"--max-calls-per-client {limit}" in text(result)
            (marks / "release").write_text("go")
        for i in range(clients):  # each client: its limit's worth ran, one was refused
            assert sorted(r.is_error for r in results[i]) == [False] * limit + [True] * (each - limit)
            assert all(text(r).startswith("released ") for r in results[i] if not r.is_error)
        assert (marks / "peak").read_text() == str(clients * limit)  # clients are not each other's limit
    finally:
        assert gw.stop() == 0


def held_server(marks: Path, *, max_concurrency: int, timeout: float = 60.0) -> McpServerConfig:
    return McpServerConfig(
        name="held",
        command=sys.executable,
        args=(str(HOLD_SERVER),),
        env={"HOLD_DIR": str(marks)},
        timeout=timeout,
        max_concurrency=max_concurrency,
    )


def context(tag: str) -> ToolCallContext[Any]:
    return ToolCallContext(call_id=tag, run_id="r", tool_name="held__hold")


async def test_an_upstream_server_gets_at_most_its_limit(marks: Path, tmp_path: Path) -> None:
    toolset = McpToolset([held_server(marks, max_concurrency=3)], tmp_path)
    answers: list[str] = []
    try:
        await toolset.prepare(strict=True)
        [hold] = [x for x in toolset.servers["held"].tools() if x.mcp_name == "hold"]

        async def call(i: int) -> None:
            with anyio.fail_after(hold.timeout or 60):  # as a run's call path bounds it
                result = await hold.execute({"tag": str(i)}, context(str(i)))
            answers.append(result.content)

        async with anyio.create_task_group() as tg:
            for i in range(30):
                tg.start_soon(call, i)
            await until(lambda: len(list(marks.glob("started-*"))) == 3)
            (marks / "release").write_text("go")
        assert sorted(answers) == sorted(f"released {i}" for i in range(30))
        assert (marks / "peak").read_text() == "3"  # never more at once, and as many as allowed
    finally:
        await toolset.aclose()


async def test_a_call_that_finds_no_free_slot_in_time_fails_naming_the_limit(marks: Path, tmp_path: Path) -> None:
    toolset = McpToolset([held_server(marks, max_concurrency=2)], tmp_path)
    waited: list[Any] = []
    held: list[Any] = []
    try:
        await toolset.prepare(strict=True)
        [hold] = [x for x in toolset.servers["held"].tools() if x.mcp_name == "hold"]

        async def holder(tag: str) -> None:
            held.append(await hold.execute({"tag": tag}, context(tag)))

        async def waiter(tag: str) -> None:
            with anyio.fail_after(1.0):  # a call whose tool timeout is 1 s
                waited.append(await hold.execute({"tag": tag}, context(tag)))

        async with anyio.create_task_group() as tg:
            for tag in ("a", "b"):
                tg.start_soon(holder, tag)
            await until(lambda: (marks / "started-a").exists() and (marks / "started-b").exists())
            async with anyio.create_task_group() as waiting:
                for i in range(20):
                    waiting.start_soon(waiter, f"w{i}")
            (marks / "release").write_text("go")
        assert len(waited) == 20
        for result in waited:  # an error result, not the call path's bare timeout
            assert result.is_error
            assert "MCP server 'held'" in result.content and "max_concurrency = 2" in result.content
        assert not list(marks.glob("started-w*"))  # none of them was sent
        assert sorted(r.content for r in held) == ["released a", "released b"]
    finally:
        await toolset.aclose()
