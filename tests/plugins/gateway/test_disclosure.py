"""``greenroom serve --experimental progressive-disclosure``: ``tools/catalog``,
``tools/describe`` and ``tools/manifest`` sent by the SDK's own client as it sends any request
(``send_request``), over the real reference servers: every tool the caller may call is in
the catalog (deferred ones too, found by a query through greenroom's search), described in
full, digested in the manifest, and callable by name without a search; a tool the policy or
the caller's scopes hide is in none of them and is described as a name that does not exist."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import mcp_types as t
import pytest
from pydantic import TypeAdapter
from support.serve_testutil import http_client, stdio_gateway

pytestmark = pytest.mark.anyio

FLAG = ("--experimental", "progressive-disclosure")
POLICY = '\n[tools.policy]\ndeny = ["git__git_commit"]\n'
ANSWER = TypeAdapter(dict[str, Any])


class Raw(t.Request[dict[str, Any] | None, str]):
    """A request of a method the SDK has no type for."""


async def ask(client: Any, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    answer: dict[str, Any] = await client.send_request(Raw(method=method, params=params), ANSWER)
    return answer


def canonical(tool: dict[str, Any]) -> bytes:
    """RFC 8785 as the drafts define it, for what these tools hold (strings, integers)."""
    return json.dumps(tool, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()


async def every_entry(client: Any, method: str, key: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    got, cursor = [], None
    while True:
        answer = await ask(client, method, {**(params or {}), **({"cursor": cursor} if cursor else {})})
        got += answer[key]
        cursor = answer.get("nextCursor")
        if not cursor:
            return got


async def test_the_catalog_describes_and_digests_every_tool_but_the_hidden_one(
    make_config: Callable[..., Path],
) -> None:
    async with stdio_gateway(make_config(POLICY), *FLAG) as client:
        assert client.init.capabilities.experimental["tools"] == {"progressiveDisclosure": True, "manifest": True}
        listed = [tool.name for tool in (await client.list_tools()).tools]
        catalog = await every_entry(client, "tools/catalog", "tools")
        names = [entry["name"] for entry in catalog]
        # what tools/list offers first, then every deferred tool; never the one the policy hides
        assert names[: len(listed)] == listed
        assert {"git__git_status", "time__get_current_time", "rich__picture"} <= set(names)
        assert "git__git_commit" not in names
        assert all(len(entry["summary"]) <= 200 and "inputSchema" not in entry for entry in catalog)
        status = next(entry for entry in catalog if entry["name"] == "git__git_status")
        assert status["tags"] == ["mcp:git"] and re.fullmatch(r"[0-9a-f]{64}", status["schemaHash"])

        found = await ask(client, "tools/catalog", {"query": "current time in a time zone"})
        assert found["tools"][0]["name"] == "time__get_current_time"
        assert all(entry["name"] != "git__git_commit" for entry in found["tools"])

        wanted = ["time__get_current_time", "git__git_status"]
        described = (await ask(client, "tools/describe", {"names": wanted}))["tools"]
        assert [tool["name"] for tool in described] == wanted
        assert "timezone" in described[0]["inputSchema"]["properties"]
        by_name = {entry["name"]: entry for entry in catalog}
        for tool in described:
            assert hashlib.sha256(canonical(tool)).hexdigest() == by_name[tool["name"]]["schemaHash"]

        manifest = await ask(client, "tools/manifest")
        assert [entry["name"] for entry in manifest["entries"]] == names
        assert manifest["cacheScope"] in ("public", "private") and isinstance(manifest["ttlMs"], int)
        entries = {entry["name"]: entry for entry in manifest["entries"]}
        for tool in described:
            body = canonical(tool)
            assert entries[tool["name"]]["digest"] == "sha256:" + hashlib.sha256(body).hexdigest()
            assert entries[tool["name"]]["size"] == len(body)

        # the hidden tool is as unknown as one that does not exist, and nothing is given in part
        for name in ("git__git_commit", "git__no_such_tool"):
            with pytest.raises(Exception) as refused:
                await ask(client, "tools/describe", {"names": ["git__git_status", name]})
            assert refused.value.error.code == -32602 and refused.value.error.data == {"unknownNames": [name]}
        with pytest.raises(Exception) as empty:
            await ask(client, "tools/describe", {"names": []})
        assert empty.value.error.data == {"reason": "empty"}

        # a described tool is called by its name, no search first
        called = await client.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
        assert not called.is_error and "Asia/Tokyo" in called.content[0].text


async def test_without_the_flag_none_of_it_is_there(make_config: Callable[..., Path]) -> None:
    async with stdio_gateway(make_config(), "--per-client") as client:
        assert not (client.init.capabilities.experimental or {}).get("tools")
        with pytest.raises(Exception, match="Method not found"):
            await ask(client, "tools/catalog")


def test_an_unknown_experimental_feature_is_refused_by_name(make_config: Callable[..., Path]) -> None:
    import subprocess
    import sys

    argv = [sys.executable, "-m", "greenroom.cli", "serve", str(make_config()), "--experimental", "telepathy"]
    run = subprocess.run(argv, capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert run.returncode == 2 and "--experimental 'telepathy': no such experimental feature" in run.stderr


# -- a caller's scopes (OAuth) apply to every path ------------------------------------------
jwt = pytest.importorskip("jwt", reason="needs PyJWT (pip install -e '.[dev]')")

from support.oauth_testutil import AuthServer, OAuthGateway  # noqa: E402

SCOPES = '\n[serve.oauth.scopes]\n"tools:time" = ["mcp:time"]\n'


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    server = AuthServer()
    yield server
    server.stop()


@pytest.mark.slow
async def test_a_tool_out_of_the_callers_scopes_is_in_no_catalog_description_or_manifest(
    make_config: Callable[..., Path], auth_server: AuthServer
) -> None:
    gateway = OAuthGateway(make_config(SCOPES), auth_server.issuer, *FLAG)
    try:
        plain = auth_server.token(gateway.url, "other", sub="bob")
        async with http_client(gateway.url, token=plain) as bob:
            catalog = [entry["name"] for entry in await every_entry(bob, "tools/catalog", "tools")]
            assert "git__git_status" in catalog and not any(n.startswith("time__") for n in catalog)
            found = await ask(bob, "tools/catalog", {"query": "current time in a time zone"})
            assert not any(entry["name"].startswith("time__") for entry in found["tools"])
            manifest = await ask(bob, "tools/manifest")
            assert not any(entry["name"].startswith("time__") for entry in manifest["entries"])
            with pytest.raises(Exception) as refused:
                await ask(bob, "tools/describe", {"names": ["time__get_current_time"]})
            assert refused.value.error.data == {"unknownNames": ["time__get_current_time"]}
        full = auth_server.token(gateway.url, "tools:time", sub="carol")
        async with http_client(gateway.url, token=full) as carol:
            described = await ask(carol, "tools/describe", {"names": ["time__get_current_time"]})
            assert described["tools"][0]["name"] == "time__get_current_time"
    finally:
        gateway.stop()
