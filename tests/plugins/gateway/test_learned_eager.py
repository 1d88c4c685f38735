"""Learning takes effect on MCP tools: a tool one gateway client called is eager for the
next client (``tools/list`` holds it, sent from the listing cache), and ``greenroom
inspect`` gives the prior as the reason. No model, no key: an SDK client over stdio."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.serve_testutil import learning_config, stdio_gateway

from greenroom import build_runtime
from greenroom.cli.inspection import inspect_runtime

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

TOOL = "time__get_current_time"


async def test_a_tool_one_client_used_is_eager_for_the_next(tmp_path: Path) -> None:
    config = learning_config(tmp_path)
    async with stdio_gateway(config) as first:
        listed = [t.name for t in (await first.list_tools()).tools]
        assert TOOL not in listed  # deferred behind the search tool: nothing learned yet
        result = await first.call_tool(TOOL, {"timezone": "UTC"})
        assert not result.is_error
    # the first client left: its run ended and its use was saved
    async with stdio_gateway(config) as second:
        listed = [t.name for t in (await second.list_tools()).tools]
        assert TOOL in listed
        assert not (await second.call_tool(TOOL, {"timezone": "UTC"})).is_error

    rt = build_runtime(config, offline_model=True)
    report = await inspect_runtime(rt)
    row = next(r for r in report["tools"] if r["name"] == TOOL)
    assert (row["mode"], row["source"]) == ("eager", "prior")
    assert row["reason"].startswith("prior: an eager set covering 100% of recent sessions")
