"""``greenroom serve`` over stdio, driven by the official SDK's client: what a client is
offered (the search, the dispatcher, the listing, not every upstream tool), calls through
the deferral, results as the upstream servers gave them, policy, prompts and resources,
priors learned from the calls, and list_changed with the inject strategy."""

from __future__ import annotations

import base64
import json
import runpy
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from support.serve_testutil import PNG, RICH_SERVER, WAV, stdio_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SEARCH, DISPATCH, LOAD = "ToolSearch", "deferred_tool_call", "load_tools"


def text_of(result: t.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, t.TextContent))


async def test_offers_the_search_and_finds_and_calls_a_deferred_tool(
    make_config: Callable[..., Path], git_repo: Path
) -> None:
    async with stdio_gateway(make_config()) as client:
        names = [tool.name for tool in (await client.list_tools()).tools]
        assert {SEARCH, DISPATCH, LOAD} <= set(names)
        assert not any(n.startswith(("git__", "time__", "rich__")) for n in names)  # deferred, not listed
        # the instructions carry the listing of what can be found
        instructions = client.init.instructions or ""
        assert "git__git_status" in instructions and "time__get_current_time" in instructions

        found = await client.call_tool(SEARCH, {"query": "current time in a time zone"})
        assert not found.is_error
        assert "time__get_current_time" in text_of(found)

        now = await client.call_tool(
            DISPATCH, {"tool_name": "time__get_current_time", "arguments": {"timezone": "Europe/Oslo"}}
        )
        assert not now.is_error, text_of(now)
        assert "Europe/Oslo" in text_of(now)

        args = {"repo_path": str(git_repo)}
        status = await client.call_tool(DISPATCH, {"tool_name": "git__git_status", "arguments": args})
        assert not status.is_error and "On branch main" in text_of(status)


async def test_a_search_gives_the_schemas_in_its_structured_content_too(make_config: Callable[..., Path]) -> None:
    # clients that show their model only the structured part (pydantic-ai when every block
    # is text, fastmcp's .data) must see the schemas the text gives
    weather = next(x for x in runpy.run_path(str(RICH_SERVER))["TOOLS"] if x.name == "weather")
    async with stdio_gateway(make_config()) as client:
        found = await client.call_tool(SEARCH, {"query": "select:rich__weather,time__get_current_time,nowhere"})
        structured = found.structured_content
        assert structured is not None
        tools = {d["name"]: d for d in structured["tools"]}
        assert tools["rich__weather"]["parameters"] == weather.input_schema
        assert tools["time__get_current_time"]["parameters"]["required"] == ["timezone"]
        # the same facts as the text: each definition, the names not found, how to call them
        lines = [x.removeprefix("<function>").removesuffix("</function>") for x in text_of(found).splitlines()]
        assert structured["tools"] == [json.loads(x) for x in lines if x.startswith("{")]
        assert "Not found: nowhere" in structured["message"] and DISPATCH in structured["message"]
        unknown = await client.call_tool(SEARCH, {"query": "group:nowhere"})
        assert unknown.structured_content == {"tools": [], "message": text_of(unknown)}
        loaded = await client.call_tool(LOAD, {"group_id": "mcp:rich", "tool_names": ["rich__weather"]})
        # the text is the same JSON, compacted: its null and empty fields left out
        full = loaded.structured_content
        assert full is not None and full["error"] is None
        assert json.loads(text_of(loaded)) == {k: v for k, v in full.items() if v not in (None, [], "", {})}


async def test_results_prompts_and_resources_are_as_upstream_gave_them(make_config: Callable[..., Path]) -> None:
    async with stdio_gateway(make_config()) as client:

        async def call(name: str, args: dict[str, Any] | None = None) -> t.CallToolResult:
            return await client.call_tool(DISPATCH, {"tool_name": f"rich__{name}", "arguments": args or {}})

        picture = await call("picture")
        assert isinstance(picture.content[0], t.ImageContent)
        assert picture.content[0].data == PNG and picture.content[0].mime_type == "image/png"
        assert base64.b64decode(picture.content[0].data).startswith(b"\x89PNG")
        assert text_of(picture) == "a sunset"

        weather = await call("weather", {"city": "Oslo"})
        assert weather.structured_content == {"city": "Oslo", "celsius": 21.5}

        bundle = await call("bundle")
        link, inline, blob, audio = bundle.content
        assert isinstance(link, t.ResourceLink) and str(link.uri) == "rich://notes"
        assert isinstance(inline, t.EmbeddedResource) and isinstance(inline.resource, t.TextResourceContents)
        assert inline.resource.text == "inline text"
        assert isinstance(blob, t.EmbeddedResource) and isinstance(blob.resource, t.BlobResourceContents)
        assert blob.resource.blob == PNG
        assert isinstance(audio, t.AudioContent) and audio.data == WAV

        broken = await call("broken")
        assert broken.is_error and text_of(broken) == "it broke"

        # a model's mistake is an error result the client reads, not a protocol error
        invalid = await call("weather", {"town": "Oslo"})
        assert invalid.is_error and "city" in text_of(invalid)

        # upstream prompts and resources, prompts named by server
        prompts = (await client.list_prompts()).prompts
        assert [p.name for p in prompts if p.name.startswith("rich__")] == ["rich__haiku"]
        got = await client.get_prompt("rich__haiku", {"topic": "tea"})
        assert isinstance(got.messages[0].content, t.TextContent)
        assert got.messages[0].content.text == "Write a haiku about tea."

        resources = {str(r.uri): r for r in (await client.list_resources()).resources}
        assert {"rich://notes", "rich://logo"} <= set(resources)
        notes = await client.read_resource("rich://notes")
        assert isinstance(notes.contents[0], t.TextResourceContents) and notes.contents[0].text == "the notes"
        logo = await client.read_resource("rich://logo")
        assert isinstance(logo.contents[0], t.BlobResourceContents) and logo.contents[0].blob == PNG


async def test_policy_hides_tools_and_resources_of_two_servers_are_told_apart(
    make_config: Callable[..., Path], shared: Path
) -> None:
    # twin runs rich's very command line, so its listing is rich's, cached already: the
    # instructions a gateway gives on its first start name only servers listed before
    twin = f"""
[[tools.mcp]]
name = "twin"
command = {sys.executable!r}
args = [{str(RICH_SERVER)!r}, {str(shared)!r}]

[tools.policy]
deny = ["rich__*", "git__git_commit"]
"""
    async with stdio_gateway(make_config(twin)) as client:
        # the policy: not listed, never found, refused
        instructions = client.init.instructions or ""
        assert "rich__picture" not in instructions and "git__git_commit" not in instructions
        assert "twin__picture" in instructions
        found = await client.call_tool(SEARCH, {"query": "draw a picture of a sunset"})
        assert "rich__picture" not in text_of(found) and "twin__picture" in text_of(found)
        refused = await client.call_tool(DISPATCH, {"tool_name": "rich__picture", "arguments": {}})
        assert refused.is_error and not any(isinstance(b, t.ImageContent) for b in refused.content)

        # both servers offer rich://notes: each is offered under a name of its own
        uris = sorted(str(r.uri) for r in (await client.list_resources()).resources)
        assert "rich://notes" not in uris
        assert "greenroom://rich/rich%3A%2F%2Fnotes" in uris and "greenroom://twin/rich%3A%2F%2Fnotes" in uris
        notes = await client.read_resource("greenroom://twin/rich%3A%2F%2Fnotes")
        assert isinstance(notes.contents[0], t.TextResourceContents) and notes.contents[0].text == "the notes"
        assert str(notes.contents[0].uri) == "greenroom://twin/rich%3A%2F%2Fnotes"
        assert {p.name for p in (await client.list_prompts()).prompts} >= {"rich__haiku", "twin__haiku"}


async def test_per_client_learns_under_the_clients_name_too(make_config: Callable[..., Path]) -> None:
    config = make_config(agent_id="desk")
    async with stdio_gateway(config, "--per-client", client="Cursor IDE") as client:
        await client.call_tool(DISPATCH, {"tool_name": "rich__picture", "arguments": {}})
    agents = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "priors", "export", "desk.Cursor-IDE"], capture_output=True, text=True
    )
    assert agents.returncode == 0, agents.stderr
    assert "rich__picture" in agents.stdout


async def test_inject_adds_found_tools_and_says_the_list_changed(make_config: Callable[..., Path]) -> None:
    notes: list[Any] = []

    async def on_message(message: Any) -> None:
        notes.append(message)

    async with stdio_gateway(make_config(strategy="inject"), on_message=on_message) as client:
        before = [tool.name for tool in (await client.list_tools()).tools]
        assert "time__get_current_time" not in before
        await client.call_tool(SEARCH, {"query": "current time in a time zone"})
        after = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert "time__get_current_time" in after
        assert any(isinstance(n, t.ToolListChangedNotification) for n in notes)
        now = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
        assert not now.is_error and "UTC" in text_of(now)


async def test_upstream_progress_reaches_the_client(make_config: Callable[..., Path]) -> None:
    heard: list[tuple[float, float | None, str | None]] = []

    async def progress(done: float, total: float | None, message: str | None) -> None:
        heard.append((done, total, message))

    async with stdio_gateway(make_config()) as client:
        result = await client.call_tool(
            DISPATCH, {"tool_name": "rich__steps", "arguments": {}}, progress_callback=progress
        )
    assert text_of(result) == "three steps done"
    assert heard == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
