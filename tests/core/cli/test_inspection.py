"""``greenroom inspect``'s report: what is sent on step 1, and each tool's placement as the
plugins tell it through ``greenroom_inspect_tools`` (core knows no plugin's state)."""

from __future__ import annotations

from typing import Any

import pytest

from greenroom import Plugin, RequestDraft, ToolPlacement, hookimpl, tool
from greenroom.cli.inspection import inspect_runtime

pytestmark = pytest.mark.anyio


def placed(entry: dict[str, Any]) -> tuple[str, str, str]:
    return entry["mode"], entry["source"], entry["reason"]


def tools() -> list[Any]:
    return [tool(lambda q: q, name=name, description=f"{name}.") for name in ("shown", "kept_back", "plain")]


class KeepBack(Plugin):
    """Sends every tool but ``kept_back``, and says why."""

    name = "keep-back"

    @hookimpl
    def greenroom_before_inference(self, ctx: Any, request: RequestDraft) -> None:
        request.tools[:] = [d for d in request.tools if d.name != "kept_back"]

    @hookimpl
    def greenroom_inspect_tools(self, ctx: Any) -> dict[str, ToolPlacement]:
        return {
            "shown": ToolPlacement("eager", "listed", "on the short list"),
            "kept_back": ToolPlacement("deferred", "policy", "kept back by policy"),
        }


class Overruled(Plugin):
    name = "overruled"

    @hookimpl(trylast=True)
    def greenroom_inspect_tools(self, ctx: Any) -> dict[str, ToolPlacement]:
        return {"shown": ToolPlacement("deferred", "other", "a later answer")}


async def test_hook_greenroom_inspect_tools(make_runtime) -> None:
    """Placements come from the hook; when two plugins name a tool, the first answer wins."""
    rt = make_runtime(tools=tools(), plugins=[KeepBack(), Overruled()])
    report = await inspect_runtime(rt)
    by_name = {t["name"]: t for t in report["tools"]}
    assert placed(by_name["shown"]) == ("eager", "listed", "on the short list")
    assert placed(by_name["kept_back"]) == ("deferred", "policy", "kept back by policy")
    assert placed(by_name["plain"]) == ("eager", "", "")  # no plugin placed it: what was sent, no reason
    assert report["totals"]["eager"] == 2 and report["totals"]["deferred"] == 1


async def test_without_placing_plugins_every_sent_tool_is_eager(make_runtime) -> None:
    report = await inspect_runtime(make_runtime(tools=tools()))
    assert [(t["mode"], t["source"]) for t in report["tools"]] == [("eager", "")] * 3
    assert report["totals"]["saved_ratio"] == 0
