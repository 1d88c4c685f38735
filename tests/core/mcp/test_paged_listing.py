"""A server that lists its tools over many pages is listed one page ahead (the next page
asked for while this one is taken in), and the listing is the one a single page gives:
the same tools, in the server's order, with the same digest. A page that fails fails the
listing as it did, a page the SDK refuses is taken tool by tool, a looping or endless
paginator still ends, and a listing cancelled with a page in flight leaves nothing behind."""

from __future__ import annotations

import gc
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from mcp import ClientSession, StdioServerParameters
from mcp.client.stdio import stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.memory import create_client_server_memory_streams

from greenroom.mcp import connection
from greenroom.mcp.connection import list_server
from greenroom.mcp.listing import NO_SCHEMA, ListingBuilder, McpListing
from greenroom.tools.catalog import peek_schema

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from paged_server import make_server, schema  # noqa: E402

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def stdio_session(tmp_path: Path, **env: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable, args=[str(HERE / "paged_server.py")], env={"PAGED_LOG": str(tmp_path / "asked"), **env}
    )
    with open(tmp_path / "stderr", "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write), ClientSession(read, write) as session:
            yield session


async def listed(tmp_path: Path, **env: str) -> McpListing:
    (tmp_path / "asked").unlink(missing_ok=True)
    async with stdio_session(tmp_path, **env) as session:
        return await list_server(session, await session.initialize())


def asked(tmp_path: Path) -> list[str]:
    return (tmp_path / "asked").read_text().split()


async def test_many_pages_list_the_tools_a_single_page_lists_in_order(tmp_path: Path) -> None:
    paged = await listed(tmp_path, PAGED_TOOLS="2500", PAGED_SIZE="300")
    assert asked(tmp_path) == ["-", *(str(n) for n in range(300, 2500, 300))]  # 9 pages, each asked once
    whole = await listed(tmp_path, PAGED_TOOLS="2500", PAGED_SIZE="2500")
    assert asked(tmp_path) == ["-"]
    assert [t.name for t in paged.tools] == [f"t{i}" for i in range(2500)]
    assert paged.tools == whole.tools and paged.digest == whole.digest
    assert paged.encoded == whole.encoded  # the cache file's lines too
    assert gc.isenabled()  # the collector, paused while listing, runs again
    assert peek_schema(paged.tools[1234].input_schema) == schema(1234)


async def test_the_next_page_is_asked_for_while_a_page_is_taken_in(monkeypatch: pytest.MonkeyPatch) -> None:
    # in process, so the order of what both sides do is one sequence
    events: list[tuple[str, str | None]] = []
    add_mcp = ListingBuilder.add_mcp

    def taking(builder: ListingBuilder, tool: Any) -> None:
        events.append(("took", tool.name))
        add_mcp(builder, tool)

    monkeypatch.setattr(ListingBuilder, "add_mcp", taking)
    server = make_server({"PAGED_TOOLS": "5000", "PAGED_SIZE": "1000"}, lambda c: events.append(("asked", c)))
    async with in_process(server) as session:
        listing = await list_server(session, await session.initialize())
    assert [t.name for t in listing.tools] == [f"t{i}" for i in range(5000)]
    asks = [c for kind, c in events if kind == "asked"]
    assert asks == [None, "1000", "2000", "3000", "4000"]
    for page in range(4):  # the last tool of each page but the last is taken in after the next page was asked for
        last = events.index(("took", f"t{page * 1000 + 999}"))
        assert events.index(("asked", str((page + 1) * 1000))) < last


@asynccontextmanager
async def in_process(server: Any) -> AsyncIterator[ClientSession]:
    async with create_client_server_memory_streams() as (client, srv), anyio.create_task_group() as tg:
        tg.start_soon(server.run, srv[0], srv[1], server.create_initialization_options())
        async with ClientSession(client[0], client[1]) as session:
            yield session
        tg.cancel_scope.cancel()


async def test_a_page_that_fails_fails_the_listing_with_its_own_error(tmp_path: Path) -> None:
    async with stdio_session(tmp_path, PAGED_TOOLS="2500", PAGED_SIZE="300", PAGED_FAIL_PAGE="3") as session:
        init = await session.initialize()
        with pytest.raises(MCPError, match="page 3 could not be listed"):  # itself, not in an exception group
            await list_server(session, init)
    assert gc.isenabled()  # paused for the listing only, failed or not
    assert asked(tmp_path) == ["-", "300", "600"]  # nothing asked past the failed page


async def test_a_page_the_sdk_refuses_is_taken_tool_by_tool_in_its_place(tmp_path: Path) -> None:
    paged = await listed(tmp_path, PAGED_TOOLS="2500", PAGED_SIZE="300", PAGED_BROKEN_PAGE="2")
    whole = await listed(tmp_path, PAGED_TOOLS="2500", PAGED_SIZE="2500", PAGED_BROKEN_PAGE="1")
    names = [f"t{i}" for i in range(2500)]
    assert [t.name for t in paged.tools] == [*names[:301], "broken", *names[301:]]
    (broken,) = [t for t in paged.tools if t.fault is not None]
    assert broken.name == "broken" and broken.fault == NO_SCHEMA
    assert len(whole.tools) == 2501 and whole.tools[1].name == "broken"
    assert sorted(paged.tools) == sorted(whole.tools)  # the same tools, each as it was listed


async def test_a_paginator_that_loops_or_never_ends_is_listed_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    looped = await listed(tmp_path, PAGED_TOOLS="1500", PAGED_SIZE="300", PAGED_LOOP="1")
    assert [t.name for t in looped.tools] == [f"t{i}" for i in range(1500)]
    assert asked(tmp_path) == ["-", "300", "600", "900", "1200"]  # the cursor back to "300" is not followed
    monkeypatch.setattr(connection, "_MAX_LIST_PAGES", 3)
    capped = await listed(tmp_path, PAGED_TOOLS="1500", PAGED_SIZE="300", PAGED_LOOP="1")
    assert [t.name for t in capped.tools] == [f"t{i}" for i in range(900)]
    assert asked(tmp_path) == ["-", "300", "600"]  # no page asked for ahead past the bound


async def test_a_listing_cancelled_with_a_page_in_flight_ends_at_once_and_leaves_no_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asks: list[str | None] = []
    server = make_server({"PAGED_TOOLS": "3000", "PAGED_SIZE": "1000", "PAGED_HANG_PAGE": "2"}, asks.append)
    with anyio.fail_after(30):  # a task left behind would hang the test: fail it instead
        async with in_process(server) as session:
            init = await session.initialize()
            with anyio.CancelScope() as scope:
                add_mcp = ListingBuilder.add_mcp

                def taking(builder: ListingBuilder, tool: Any) -> None:
                    if tool.name == "t999":  # page 1's last tool: page 2 is in flight, never answered
                        scope.cancel()
                    add_mcp(builder, tool)

                monkeypatch.setattr(ListingBuilder, "add_mcp", taking)
                await list_server(session, init)
            assert scope.cancelled_caught and asks == [None, "1000"]
            monkeypatch.undo()
            assert [t.name for t in (await session.list_tools()).tools][:2] == ["t0", "t1"]  # the session still answers
