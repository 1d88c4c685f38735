"""Code mode through ``greenroom serve`` (the Cloudflare/Bifrost shape: a search and a tool
that runs code), behind ``--enable code-mode``, driven by the official SDK's client over
stdio: a script calls two deferred tools of a real upstream server and returns what it
needs; hostile scripts end as error results and the gateway goes on serving."""

from __future__ import annotations

import json
import runpy
import subprocess
from pathlib import Path

import mcp_types as t
import pytest
from support.serve_testutil import serve_argv, stdio_gateway

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

SCRIPTS = runpy.run_path(str(Path(__file__).with_name("hostile_scripts.py")))
HOSTILE: dict[str, tuple[str, str]] = SCRIPTS["HOSTILE"]

SCRIPT = """
const read = (r) => (typeof r === "string" ? JSON.parse(r) : r);
const tokyo = read(await tools.time__get_current_time({timezone: "Asia/Tokyo"}));
const moved = read(await tools.time__convert_time(
  {source_timezone: "Europe/Paris", time: "09:30", target_timezone: "America/New_York"}));
return {tokyo: tokyo.timezone, new_york: moved.target.datetime.slice(11, 16)};
"""


@pytest.fixture
def gateway_config(tmp_path: Path, time_server: str) -> Path:
    (tmp_path / "echo_tools.py").write_text(SCRIPTS["ECHO_TOOLS"], encoding="utf-8")
    config = tmp_path / "gateway.toml"
    config.write_text(
        f'[agent]\nid = "desk"\nmodel = "scripted:"\n[tools]\npython = ["echo_tools.py:TOOLS"]\n{time_server}'
        "[plugins.code-mode]\ntimeout = 3\nmemory_mb = 64\nmax_calls = 20\nmax_message_bytes = 65536\n",
        encoding="utf-8",
    )
    return config


def text_of(result: t.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, t.TextContent))


async def test_the_gateway_offers_run_code_only_behind_the_flag(gateway_config: Path) -> None:
    async with stdio_gateway(gateway_config) as client:
        assert "run_code" not in {tool.name for tool in (await client.list_tools()).tools}
    async with stdio_gateway(gateway_config, "--enable", "code-mode") as client:
        offered = {tool.name for tool in (await client.list_tools()).tools}
        assert {"ToolSearch", "run_code"} <= offered and not any(n.startswith("time__") for n in offered)
        result = await client.call_tool("run_code", {"code": SCRIPT})
        assert not result.is_error, text_of(result)
        assert json.loads(text_of(result)) == result.structured_content["result"]
        assert result.structured_content["result"]["tokyo"] == "Asia/Tokyo"
        assert result.structured_content["result"]["new_york"] in ("03:30", "04:30")
        assert "is_dst" not in text_of(result)  # the raw results stayed in the sandbox

        for kind, (code, expected) in HOSTILE.items():
            hostile = await client.call_tool("run_code", {"code": code})
            assert hostile.is_error and expected in text_of(hostile), (kind, text_of(hostile))
        still = await client.call_tool("run_code", {"code": "return await tools.echo({text: 'still here'})"})
        assert not still.is_error and text_of(still) == "still here"


def test_enabling_a_plugin_that_is_not_installed_is_refused(gateway_config: Path) -> None:
    done = subprocess.run(
        serve_argv(gateway_config, "--enable", "no-such-plugin"),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        cwd=gateway_config.parent,
    )
    assert done.returncode != 0
    said = " ".join(done.stderr.split())
    assert "no installed plugin named 'no-such-plugin' to enable" in said and "code-mode" in said
