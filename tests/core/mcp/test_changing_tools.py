"""An MCP server whose tools change while it runs (``notifications/tools/list_changed``)
is listed again: a new tool is offered, found and callable on the next step, a removed
one leaves every list, the listing cache follows, and the config's policy judges the new
tools as it judged the first. A server that lists a tool MCP does not allow (no
``inputSchema``, one that is not an object) loses that tool only."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from greenroom import events as ev
from greenroom.compose.build import build_runtime
from greenroom.mcp import read_cached_listing

pytestmark = pytest.mark.anyio

SERVER = Path(__file__).with_name("changing_server.py")


def agent(folder: Path, turns: list[dict[str, Any]], *, defer: bool, extra: str = "", env: str = "") -> Path:
    script = [*turns, {"text": "done"}]
    (folder / "script.jsonl").write_text("\n".join(json.dumps(t) for t in script) + "\n")
    plugin = "[plugins.deferred-tools]\nenabled = true\n" if defer else ""
    path = folder / "agent.toml"
    path.write_text(
        f'[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 12\n{extra}\n'
        f'[[tools.mcp]]\nname = "changing"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(SERVER))}]\ndefer = {'true' if defer else 'false'}\n{env}\n{plugin}"
    )
    return path


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": tool, "arguments": arguments}]}


def dispatch(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return call("deferred_tool_call", tool_name=tool, arguments=arguments)


async def run(path: Path) -> tuple[Any, list[Any], list[ev.Event]]:
    rt = build_runtime(path)
    seen: list[ev.Event] = []
    rt.events.subscribe(seen.append)
    try:
        session = rt.session()
        await session.run("go")
        return rt, [m for m in session.messages if m.role == "tool"], seen
    finally:
        await rt.aclose()


async def test_a_tool_the_server_adds_is_offered_on_the_next_step_and_one_it_removes_leaves(tmp_path: Path) -> None:
    turns = [
        call("changing__grow", name="flip"),
        call("changing__flip", text="abc"),
        call("changing__shrink", name="flip"),
        call("changing__flip", text="abc"),
    ]
    rt, (grown, flipped, shrunk, gone), seen = await run(agent(tmp_path, turns, defer=False))
    assert grown.content == "added flip" and shrunk.content == "removed flip"
    assert not flipped.is_error and flipped.content == "cba"
    assert gone.is_error and "changing__flip" in gone.content
    offered = [{t.name for t in request.tools} for request in rt.model.requests]
    assert "changing__flip" not in offered[0] and "changing__flip" in offered[1]
    assert "changing__flip" not in offered[3]
    changes = [(e.added, e.removed) for e in seen if isinstance(e, ev.ToolsRelisted)]
    assert changes == [(("changing__flip",), ()), ((), ("changing__flip",))]
    config = rt.config.tools.mcp[0]
    cached = read_cached_listing(config, tmp_path)
    assert cached is not None and "flip" not in {t.name for t in cached.tools}  # the cache follows too


async def test_a_tool_a_deferred_server_adds_is_found_by_search_and_called(tmp_path: Path) -> None:
    turns = [
        dispatch("changing__grow", name="mirror_words"),
        call("ToolSearch", query="mirror words reverse the text"),
        dispatch("changing__mirror_words", text="abc"),
    ]
    _, (grown, found, mirrored), _ = await run(agent(tmp_path, turns, defer=True))
    assert grown.content == "added mirror_words"
    assert "changing__mirror_words" in found.content
    assert not mirrored.is_error and mirrored.content == "cba"


async def test_the_policy_judges_a_tool_that_appears_as_it_judged_the_first(tmp_path: Path) -> None:
    policy = '[tools.policy]\ndeny = ["changing__secret_*"]\n'
    turns = [
        dispatch("changing__grow", name="secret_flip"),
        call("ToolSearch", query="secret flip reverse the text"),
        dispatch("changing__secret_flip", text="abc"),
    ]
    rt, (grown, found, refused), _ = await run(agent(tmp_path, turns, defer=True, extra=policy))
    assert grown.content == "added secret_flip"
    assert "secret_flip" not in found.content
    assert refused.is_error and "cba" not in refused.content
    assert all("secret_flip" not in json.dumps([t.to_json() for t in r.tools]) for r in rt.model.requests)


async def test_a_tool_listed_without_a_valid_schema_costs_only_itself(tmp_path: Path) -> None:
    turns = [call("changing__echo", text="hi"), call("changing__no_schema"), call("changing__text_schema")]
    path = agent(tmp_path, turns, defer=False, env='env = { BROKEN_TOOLS = "1" }')
    rt, (echoed, missing, text), _ = await run(path)
    assert not echoed.is_error and echoed.content == "hi"
    assert missing.is_error and "without an inputSchema" in missing.content
    assert text.is_error and "inputSchema is a string" in text.content
    unusable = {name: problem.fault.value for name, problem in rt.tools.unusable.items()}
    assert unusable == {"changing__no_schema": "missing", "changing__text_schema": "not_a_schema"}
    offered = {t.name for t in rt.model.requests[0].tools}
    assert "changing__echo" in offered and not offered & {"changing__no_schema", "changing__text_schema"}
