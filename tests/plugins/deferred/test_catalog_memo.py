"""What deferred-tools derives from a catalog is kept with it: the tools a search ranks are
worked out once per catalog, not again on every search (at 100,000 tools each walk cost
28 ms a search), and they leave out the tools never deferred."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from greenroom import Runtime, ToolCallContext, tool
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.catalog import searched_tools

pytestmark = pytest.mark.anyio


def tools() -> list[Any]:
    made = []
    for i in range(30):

        @tool(
            name=f"lookup_{i}", description=f"Look up record kind {i}.", deferrable="never" if i == 0 else "automatic"
        )
        async def lookup(ctx: ToolCallContext, q: str) -> str:
            return q

        made.append(lookup)
    return made


async def test_the_searched_tools_are_worked_out_once_per_catalog(make_runtime: Callable[..., Runtime]) -> None:
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True, default_mode="deferred"))
    rt = make_runtime([{"text": "done"}], tools=tools(), plugins=[plugin])
    run = rt.start_run(user_input="go")
    await run.start()
    try:
        first = searched_tools(run.ctx)
        assert searched_tools(run.ctx) is first
        names = {d.name for d in first}
        assert "lookup_0" not in names  # never deferred (the tool says so): in view on every request
        assert {f"lookup_{i}" for i in range(1, 30)} <= names
    finally:
        await run.cancel()
        await rt.aclose()
