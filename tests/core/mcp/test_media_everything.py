"""An image from an MCP server nobody here wrote reaches the model as an image part: the
reference server ``@modelcontextprotocol/server-everything`` (npm, pinned) returns a PNG
from ``get-tiny-image``; the model's next request carries it on the tool message (the text
names it for models that take no images), the trace names it without its bytes, and the
session saves and resumes it.

``.ci/run`` installs the server with npm and names its entry script in
``GREENROOM_MCP_EVERYTHING``; outside CI the test skips when it is not installed."""

from __future__ import annotations

import base64
import json
import os
import shutil
from pathlib import Path

import pytest
from support.gr_testutil import ROOT

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from greenroom import TraceWriter, abuild_runtime
from greenroom.providers.scripted import ScriptedModel

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

INSTALLED = ROOT / ".ci" / "node" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


@pytest.fixture
def everything() -> str:
    found = os.environ.get("GREENROOM_MCP_EVERYTHING") or (str(INSTALLED) if INSTALLED.exists() else "")
    if not found or not Path(found).exists() or shutil.which("node") is None:
        if os.environ.get("GREENROOM_CI") or os.environ.get("CI"):
            pytest.fail("server-everything is not installed: .ci/run installs it and sets GREENROOM_MCP_EVERYTHING")
        pytest.skip(
            "needs node and the MCP server 'everything': npm install --prefix .ci/node "
            "@modelcontextprotocol/server-everything@2026.8.31"
        )
    return found


async def test_an_image_from_server_everything_reaches_the_model_as_an_image_part(
    tmp_path: Path, everything: str
) -> None:
    (tmp_path / "turns.jsonl").write_text(
        json.dumps({"tool_calls": [{"name": "everything__get-tiny-image", "arguments": {}}]})
        + "\n"
        + json.dumps({"text": "A tiny image."})
        + "\n"
    )
    config = tmp_path / "agent.toml"
    config.write_text(
        '[agent]\nid = "media"\nmodel = "scripted:turns.jsonl"\n'
        "[[tools.mcp]]\n"
        f'name = "everything"\ncommand = "node"\nargs = [{json.dumps(everything)}, "stdio"]\n'
        '[plugins]\nenable = ["scripted"]\n'
    )
    runtime = await abuild_runtime(config)
    trace = TraceWriter(tmp_path / "trace.jsonl")
    runtime.events.subscribe(trace)
    try:
        session = runtime.session()
        outcome = await session.run("show me the tiny image")
        assert outcome.stop_reason == "final", outcome
        model = runtime.model
        assert isinstance(model, ScriptedModel)
        (result,) = [m for m in model.requests[1].messages if m.role == "tool"]
        assert not result.is_error, result.content
        (part,) = result.parts
        assert (part.kind, part.mime_type) == ("image", "image/png")
        assert base64.b64decode(part.data).startswith(b"\x89PNG\r\n\x1a\n")
        assert part.placeholder() in result.content  # what a model without images reads

        session.save(tmp_path / "session.json")
        resumed = runtime.load_session(tmp_path / "session.json")
        assert [m.parts for m in resumed.messages] == [m.parts for m in session.messages]
    finally:
        trace.close()
        await runtime.aclose()
    text = (tmp_path / "trace.jsonl").read_text()
    assert part.data not in text  # the trace names the image, it does not carry it
    (executed,) = [e for e in map(json.loads, text.splitlines()) if e["kind"] == "tool_result"]
    assert executed["parts"] == [{"kind": "image", "mime_type": "image/png", "bytes": part.size}]
