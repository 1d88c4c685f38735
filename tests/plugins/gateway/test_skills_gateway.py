"""Skills through the gateway (SEP-2640), both ways: an upstream SDK server's skills and
a local ``[skills] folders`` are offered to the SDK's own client by ``skills/list``,
``skills/get``, ``resources/read`` and ``resources/directory/read``, with digests that
match the bytes served and cache fields; what the policy hides is never offered, and a
file that is not what its entry says is refused with a sentence naming it."""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from mcp import StdioServerParameters
from mcp.client.client import Client
from mcp.shared.exceptions import MCPError
from support.serve_testutil import http_client, serve_argv
from support.skills import skills_server_toml, two_skills, write_skill

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

EXTENSION = "io.modelcontextprotocol/skills"
PDF = "skill://docs/pdf-processing/SKILL.md"
GIT = "skill://docs/git-workflow/SKILL.md"
NOTES = "skill://local/release-notes/SKILL.md"


class Params(t.RequestParams):
    uri: str | None = None
    cursor: str | None = None


class Answer(t.Result):
    """Any result, its fields kept as sent."""

    model_config = {"extra": "allow"}


async def ask(client: Any, method: str, **params: Any) -> dict[str, Any]:
    request = t.Request[Params | None, str](method=method, params=Params(**params) if params else None)
    session = client.session if isinstance(client, Client) else client  # Client, or a bare ClientSession
    answer = await session.send_request(request, Answer)
    return answer.model_dump(by_alias=True, exclude_none=True)


def config(folder: Path, extra: str = "", env: str = "") -> Path:
    served = two_skills(folder / "served")
    local = folder / "local-skills"
    write_skill(local, "release-notes", "Write release notes from merged changes", "List user-visible changes.\n")
    path = folder / "gw.toml"
    path.write_text(
        '[agent]\nid = "gw"\nmodel = "scripted:"\n[skills]\nfolders = ["local-skills"]\n'
        + skills_server_toml("docs", served, folder / "server.log", env)
        + extra,
        encoding="utf-8",
    )
    return path


@asynccontextmanager
async def gateway(path: Path, mode: str = "2026-07-28") -> AsyncIterator[Client]:
    argv = serve_argv(path)
    params = StdioServerParameters(command=argv[0], args=argv[1:], env=dict(os.environ))
    async with Client(params, mode=mode) as client:
        yield client


def digest(data: bytes) -> str:
    return "sha256:" + hashlib.sha256(data).hexdigest()


async def read(client: Client, uri: str) -> bytes:
    result = await client.read_resource(uri)
    (content,) = result.contents
    assert isinstance(content, t.TextResourceContents)
    return content.text.encode()


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # initialize (2025-11-25); server/discover (2026-07-28)
async def test_upstream_and_local_skills_are_served_with_digests_that_match(
    tmp_path: Path, gr_home: Path, mode: str
) -> None:
    async with gateway(config(tmp_path), mode) as client:
        if mode != "legacy":  # 2025-11-25's capabilities have no room for extensions
            assert client.server_capabilities.extensions == {EXTENSION: {"directoryRead": True}}
        listed = await ask(client, "skills/list")
        entries = {e["uri"]: e for e in listed["skills"]}
        assert set(entries) == {PDF, GIT, NOTES}
        assert listed["ttlMs"] > 0 and listed["cacheScope"] == "public"
        assert entries[NOTES]["frontmatter"] == {
            "name": "release-notes",
            "description": "Write release notes from merged changes",
        }
        for entry in entries.values():  # every file served is the bytes its digest covers
            for resource in entry["resources"]:
                data = await read(client, resource["uri"])
                assert (digest(data), len(data)) == (resource["digest"], resource["size"])
        got = await ask(client, "skills/get", uri=PDF)
        assert got["skill"] == entries[PDF] and got["cacheScope"] == "public"
        form = await read(client, "skill://docs/pdf-processing/references/FORMS.md")
        assert form == b"Forms are filled field by field.\n"
        folder = await ask(client, "resources/directory/read", uri="skill://docs/pdf-processing")
        assert {(r["name"], r["mimeType"]) for r in folder["resources"]} == {
            ("SKILL.md", "text/markdown"),
            ("references", "inode/directory"),
        }
        with pytest.raises(MCPError, match=re.escape("No skill is served at skill://docs/nothing/SKILL.md")):
            await ask(client, "skills/get", uri="skill://docs/nothing/SKILL.md")
        with pytest.raises(MCPError, match=re.escape("no resource 'skill://pdf-processing/SKILL.md'")):
            await client.read_resource("skill://pdf-processing/SKILL.md")  # upstream's own URI: not passed on


async def test_a_skill_the_policy_hides_is_never_listed_got_or_read(tmp_path: Path, gr_home: Path) -> None:
    path = config(tmp_path, '[tools.policy]\ndeny = ["docs__skill_git*"]\n')
    async with gateway(path) as client:
        listed = await ask(client, "skills/list")
        assert {e["uri"] for e in listed["skills"]} == {PDF, NOTES}
        with pytest.raises(MCPError, match="No skill is served"):
            await ask(client, "skills/get", uri=GIT)
        with pytest.raises(MCPError, match="no resource"):
            await client.read_resource(GIT)
        with pytest.raises(MCPError, match="not a directory resource"):
            await ask(client, "resources/directory/read", uri="skill://docs/git-workflow")
    assert "git-workflow" not in (tmp_path / "server.log").read_text()


async def test_an_upstream_file_that_is_not_its_digests_is_refused_naming_it(tmp_path: Path, gr_home: Path) -> None:
    path = config(tmp_path, env=', SKILLS_TAMPER = "pdf-processing"')
    async with gateway(path) as client:
        said = re.escape("skill://pdf-processing/SKILL.md from MCP server 'docs' is not what")
        with pytest.raises(MCPError, match=said):
            await client.read_resource(PDF)


async def test_a_caller_without_the_servers_scope_is_offered_none_of_its_skills(tmp_path: Path, gr_home: Path) -> None:
    pytest.importorskip("jwt", reason="needs PyJWT (pip install -e '.[dev]')")
    from support.oauth_testutil import AuthServer, OAuthGateway

    path = config(tmp_path, '[serve.oauth.scopes]\n"skills:docs" = ["mcp:docs"]\n')
    auth = AuthServer()
    gw = OAuthGateway(path, auth.issuer)
    try:
        for who, scopes, offered in (("bob", "", {NOTES}), ("carol", "skills:docs", {PDF, GIT, NOTES})):
            async with http_client(gw.url, token=auth.token(gw.url, scopes, sub=who)) as client:
                listed = await ask(client, "skills/list")
                assert {e["uri"] for e in listed["skills"]} == offered
                assert listed["cacheScope"] == "private"  # what is offered depends on who asks
                if who == "bob":
                    with pytest.raises(MCPError, match="no resource"):
                        await client.read_resource(PDF)
    finally:
        gw.stop()
        auth.stop()


async def test_for_the_model_each_skill_is_a_deferred_tool_listed_from_the_cache(tmp_path: Path, gr_home: Path) -> None:
    path = config(tmp_path)
    async with gateway(path) as client:
        await ask(client, "skills/list")  # lists the upstream: its tools and skills are cached
    async with gateway(path, "legacy") as client:  # a gateway's instructions come from the caches
        instructions = client.instructions or ""
        assert "docs__skill_pdf-processing - Extract, fill, and assemble PDF documents" in instructions
        assert "skill_release-notes - Write release notes from merged changes" in instructions
        found = await client.call_tool("ToolSearch", {"query": "fill in a PDF form"})
        assert "docs__skill_pdf-processing" in str(found.content)
        loaded = await client.call_tool("deferred_tool_call", {"tool_name": "docs__skill_pdf-processing"})
        assert not loaded.is_error and "Read references/FORMS.md before filling a form." in str(loaded.content)
