"""What a stdio MCP server writes that the SDK takes badly, read right, with a real server
that writes its own JSON-RPC lines (``raw_server.py``): a ``tools`` field that is an
object is a warning naming the server, not a silent empty listing; a result whose text
holds an escaped lone surrogate (``"\\ud800"``, which JSON allows) is read, not dropped
while the call waits out its timeout; and images that are not what they say are left out
of what the model is sent, the result's text saying why."""

from __future__ import annotations

import base64
import logging
import sys
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from greenroom.config import AgentConfig, McpServerConfig
from greenroom.mcp import McpToolset
from greenroom.models import Message
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SERVER = str(Path(__file__).resolve().parent / "raw_server.py")
TIMEOUT = 30.0  # seconds a call may take: the answer comes at once, the old drop waited all of it


def raw(**env: str) -> McpServerConfig:
    return McpServerConfig(name="raw", command=sys.executable, args=(SERVER,), env=env, timeout=TIMEOUT, defer=False)


async def results_of(tmp_path: Path, *calls: str) -> list[Message]:
    toolset = McpToolset([raw()], tmp_path)
    await toolset.prepare()
    turns: list[dict[str, Any]] = [{"tool_calls": [{"name": name, "arguments": {}}]} for name in calls]
    rt = Runtime(
        model=ScriptedModel([*turns, {"text": "done"}]),
        tools=toolset.tools(),
        host=make_plugin_host(records=[]),
        agent=AgentConfig(max_steps=len(calls) + 1),
    )
    rt.on_close(toolset.aclose)
    try:
        session = rt.session()
        await session.run("go")
    finally:
        await rt.aclose()
    return [m for m in session.messages if m.role == "tool"]


async def test_a_tools_field_that_is_an_object_is_a_warning_naming_the_server(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    toolset = McpToolset([raw(RAW_TOOLS_OBJECT="1")], tmp_path)
    with caplog.at_level(logging.WARNING, logger="greenroom.mcp"):
        await toolset.prepare()
    try:
        assert toolset.tools() == []
        assert (
            "MCP server 'raw' answered tools/list with 'tools' as an object, not a list: it lists no tools"
        ) in caplog.text
    finally:
        await toolset.aclose()


async def test_a_result_line_with_an_escaped_lone_surrogate_is_read(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING):
        (result,) = await results_of(tmp_path, "raw__lone")
    assert not result.is_error, result.content
    assert result.content == "before \ufffd after"  # as a UTF-8 reader shows it; nothing else lost
    assert "not MCP" not in caplog.text  # the line was MCP, and is not called noise


async def test_images_that_are_not_what_they_say_never_reach_the_model(tmp_path: Path) -> None:
    (result,) = await results_of(tmp_path, "raw__pictures")
    (png,) = result.parts  # the one real PNG of the three
    assert (png.kind, png.mime_type) == ("image", "image/png")
    assert base64.b64decode(png.data).startswith(b"\x89PNG\r\n\x1a\n")
    assert result.content.splitlines() == [
        "[image: image/png, left out: its data is not valid base64]",
        "[image: image/png, left out: its bytes are not a PNG image]",
        png.placeholder(),
    ]
