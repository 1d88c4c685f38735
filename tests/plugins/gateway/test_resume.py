"""Streams that resume: a 2025-11-25 client whose connection dropped in the middle of a call
reconnects with ``Last-Event-ID`` and gets the call's result, which was not lost; another
session that names that event id gets nothing of it. Spoken as the SDK's HTTP client
(httpx2, its SSE reader) speaks streamable HTTP, so the drop is where the test puts it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from support.serve_testutil import HttpGateway, relay_config

pytestmark = pytest.mark.anyio

ACCEPT = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


async def events(response: httpx2.Response) -> AsyncIterator[Any]:
    async for sse in httpx2.EventSource(response):
        yield sse


async def open_session(http: httpx2.AsyncClient, url: str) -> dict[str, str]:
    """The headers of a new 2025-11-25 session's requests."""
    init = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "resumer", "version": "1"}}
    answer = await http.post(
        url, headers=ACCEPT, json={"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": init}
    )
    assert answer.status_code == 200, answer.text
    headers = {**ACCEPT, "mcp-session-id": answer.headers["mcp-session-id"], "mcp-protocol-version": "2025-11-25"}
    await http.post(url, headers=headers, json={"jsonrpc": "2.0", "method": "notifications/initialized"})
    return headers


async def replayed(http: httpx2.AsyncClient, url: str, headers: dict[str, str], last: str) -> list[Any]:
    """The JSON-RPC messages a GET with ``Last-Event-ID`` gets, up to the call's result."""
    got: list[Any] = []
    get = {**headers, "Accept": "text/event-stream", "last-event-id": last}
    async with http.stream("GET", url, headers=get) as response:
        assert response.status_code == 200
        async for sse in events(response):
            if sse.data:
                got.append(json.loads(sse.data))
                if got[-1].get("id") == 1:
                    break
    return got


async def test_a_dropped_stream_resumes_with_last_event_id_and_only_for_its_session(
    tmp_path: Path, gr_home: Path
) -> None:
    flag = tmp_path / "go.flag"
    gateway = HttpGateway(relay_config(tmp_path))
    try:
        async with httpx2.AsyncClient(timeout=httpx2.Timeout(30.0)) as http:
            mine = await open_session(http, gateway.url)
            call = {"name": "relay__when_file", "arguments": {"path": str(flag)}}
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": call}
            async with http.stream("POST", gateway.url, headers=mine, json=body) as response:
                first = await anext(events(response))
            # the stream opened with a priming event: an id, no data, and how long to wait
            assert first.id and not first.data and first.retry == 1000
            # the connection dropped with the call in progress; the call goes on, then answers
            flag.write_text("go")
            with anyio.fail_after(30):
                got = await replayed(http, gateway.url, mine, first.id)
            assert got[-1]["result"]["content"][0]["text"] == "found go.flag"
            # another session naming this session's event id resumes nothing of it
            theirs = await open_session(http, gateway.url)
            with anyio.fail_after(30):
                assert await replayed(http, gateway.url, theirs, first.id) == []
    finally:
        gateway.stop()


async def test_the_event_store_keeps_so_many_events_for_so_long() -> None:
    from mcp_types.jsonrpc import JSONRPCNotification

    from greenroom_gateway.resume import Owner, _owner, event_store

    store = event_store(max_events=3, max_age=60.0)
    now = [0.0]
    store.clock = lambda: now[0]  # type: ignore[attr-defined]
    token = _owner.set(Owner("session-1"))  # as if stored and replayed in that session's requests
    note = JSONRPCNotification(jsonrpc="2.0", method="notifications/progress", params={"progress": 1})
    ids = [await store.store_event("7", None)] + [await store.store_event("7", note) for _ in range(4)]
    got: list[Any] = []

    async def keep(event: Any) -> None:
        got.append(event.event_id)

    assert await store.replay_events_after(ids[0], keep) is None  # the oldest went: three are kept
    assert await store.replay_events_after(ids[2], keep) == "7" and got == ids[3:]
    now[0] = 61.0  # past their age, every event goes
    assert await store.replay_events_after(ids[3], keep) is None
    _owner.reset(token)
