"""The gateway with several upstream servers' resource templates (namespaced, reads routed
by matching a URI against each server's templates), and in the bare environment MCP
clients start it in (an unused ``[model]`` naming unset variables never stops it)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import mcp_types as t
import pytest
from support.serve_testutil import RICH_SERVER, stdio_gateway

pytestmark = pytest.mark.anyio


def rich(name: str, prefix: str, label: str) -> str:
    return f"""
[[tools.mcp]]
name = "{name}"
command = {sys.executable!r}
args = [{str(RICH_SERVER)!r}]
env = {{ RICH_PREFIX = "{prefix}", RICH_LABEL = "{label}" }}
"""


def config(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "gateway.toml"
    path.write_text('[agent]\nid = "gw"\n' + body, encoding="utf-8")
    return path


async def read_text(client: object, uri: str) -> str:
    result = await client.read_resource(uri)  # type: ignore[attr-defined]
    (content,) = result.contents
    assert isinstance(content, t.TextResourceContents)
    return content.text


async def test_templates_of_two_servers_are_named_apart_and_reads_find_their_server(
    tmp_path: Path, gr_home: Path
) -> None:
    body = rich("rich", "rich://", "rich") + rich("almanac", "almanac://", "almanac")
    async with stdio_gateway(config(tmp_path, body)) as client:
        listed = (await client.list_resource_templates()).resource_templates
        assert {(x.name, x.uri_template) for x in listed} == {
            ("rich__day", "rich://days/{day}"),
            ("almanac__day", "almanac://days/{day}"),
        }
        # a URI made from a template goes to the server whose template it matches
        assert await read_text(client, "almanac://days/monday") == "almanac: almanac://days/monday"
        assert await read_text(client, "rich://days/tuesday") == "rich: rich://days/tuesday"
        with pytest.raises(Exception, match="no resource"):
            await client.read_resource("calendar://days/monday")


async def test_the_same_template_on_two_servers_is_offered_once_per_server(tmp_path: Path, gr_home: Path) -> None:
    body = rich("rich", "rich://", "rich") + rich("twin", "rich://", "twin")
    async with stdio_gateway(config(tmp_path, body)) as client:
        listed = {x.name: x.uri_template for x in (await client.list_resource_templates()).resource_templates}
        assert listed == {
            "rich__day": "greenroom://rich/rich://days/{day}",
            "twin__day": "greenroom://twin/rich://days/{day}",
        }
        assert await read_text(client, "greenroom://twin/rich://days/friday") == "twin: rich://days/friday"


UNUSED_MODEL = """
[agent]
id = "gw"
model = "openai:gpt-4o-mini"

[model]
api_key_env = "GREENROOM_TEST_UNSET_KEY"
base_url = "${GREENROOM_TEST_UNSET_BASE}"
"""


async def test_an_unused_model_section_with_unset_variables_never_stops_serve(tmp_path: Path, gr_home: Path) -> None:
    path = tmp_path / "bare.toml"
    path.write_text(UNUSED_MODEL + rich("rich", "rich://", "rich"), encoding="utf-8")
    os.environ.pop("GREENROOM_TEST_UNSET_BASE", None)
    async with stdio_gateway(path) as client:
        names = {x.name for x in (await client.list_tools()).tools}
        assert "ToolSearch" in names or "rich__picture" in names
    cli = [sys.executable, "-m", "greenroom.cli"]
    check = subprocess.run([*cli, "config", "check", str(path)], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stderr
    said = " ".join((check.stdout + check.stderr).split())
    assert "warning" in said and "model.base_url" in said and "GREENROOM_TEST_UNSET_BASE" in said
    run = subprocess.run([*cli, "run", str(path), "hi"], capture_output=True, text=True, timeout=120)
    assert run.returncode == 2
    said = " ".join(run.stderr.split())
    assert "model.base_url: environment variable GREENROOM_TEST_UNSET_BASE is not set" in said
    assert "Traceback" not in run.stderr
