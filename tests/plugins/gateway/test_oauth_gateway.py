"""``greenroom serve --oauth-issuer/--oauth-audience``: the gateway as an OAuth 2.1 resource
server, against a real authorization server on loopback (oauth2-mock-server), through the
official SDK's client and plain HTTP: which tokens get in, the 401/403 answers and their
``WWW-Authenticate``, the Protected Resource Metadata, and views by the caller's scopes."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

jwt = pytest.importorskip("jwt", reason="needs PyJWT (pip install -e '.[dev]')")
rsa = pytest.importorskip("cryptography.hazmat.primitives.asymmetric.rsa", reason="needs cryptography")

from support.oauth_testutil import AuthServer, OAuthGateway  # noqa: E402
from support.serve_testutil import http_client  # noqa: E402

pytestmark = [pytest.mark.anyio, pytest.mark.slow]

# the views alone in the file, the issuer and the audience as flags (OAuthGateway gives them)
SCOPES = """
[serve.oauth.scopes]
"tools:time" = ["mcp:time"]
"tools:gitlog" = ["git__git_log"]
"""
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    server = AuthServer()
    yield server
    server.stop()


@pytest.fixture
def oauth_gateway(auth_server: AuthServer) -> Iterator[Callable[..., OAuthGateway]]:
    started: list[OAuthGateway] = []

    def start(config: Path, *extra: str) -> OAuthGateway:
        gw = OAuthGateway(config, auth_server.issuer, *extra)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()


def text(result: Any) -> str:
    return "\n".join(getattr(block, "text", "") for block in result.content)


def unquoted(answer: str, query: str) -> str:
    """An answer without the echo of the caller's own query (which names what it asked for)."""
    return answer.replace(query, "")


async def names(client: Any) -> set[str]:
    return {tool.name for tool in (await client.list_tools()).tools}


async def test_a_token_for_this_gateway_works_through_the_sdk_client(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    gw = oauth_gateway(make_config(SCOPES))
    token = auth_server.token(gw.url, "tools:time tools:gitlog")
    async with http_client(gw.url, token=token) as client:
        assert "ToolSearch" in await names(client)
        found = await client.call_tool("ToolSearch", {"query": "select:time__get_current_time"})
        assert "time__get_current_time" in text(found)
        called = await client.call_tool(
            "deferred_tool_call", {"tool_name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
        )
        assert not called.is_error and "Asia/Tokyo" in text(called)


async def test_the_protected_resource_metadata_is_served(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    gw = oauth_gateway(make_config())
    async with httpx2.AsyncClient() as http:
        prm = await http.get(f"http://127.0.0.1:{gw.port}/.well-known/oauth-protected-resource/mcp")
    assert prm.status_code == 200
    doc = prm.json()
    assert doc["resource"] == gw.url
    # exactly the issuer, as its own metadata spells it: a client compares the two
    assert doc["authorization_servers"] == [auth_server.issuer]
    assert doc["bearer_methods_supported"] == ["header"]


def wrongly_signed(auth_server: AuthServer, audience: str) -> str:
    """A token with every right claim and the issuer's key id, signed by another key."""
    kid = httpx2.get(f"{auth_server.issuer}/jwks").json()["keys"][0]["kid"]
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    now = int(time.time())
    claims = {"iss": auth_server.issuer, "aud": audience, "sub": "mallory", "iat": now, "exp": now + 600}
    claims["scope"] = "tools:time"
    return jwt.encode(claims, other, algorithm="RS256", headers={"kid": kid})


async def test_bad_tokens_get_401_with_the_resource_metadata(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    gw = oauth_gateway(make_config())
    metadata = f"http://127.0.0.1:{gw.port}/.well-known/oauth-protected-resource/mcp"
    bad = {
        "missing": None,
        "expired": auth_server.token(gw.url, ttl=-120),
        "foreign audience": auth_server.token("http://127.0.0.1:9/someone-else/mcp"),
        "no audience": auth_server.token(None),
        "wrongly signed": wrongly_signed(auth_server, gw.url),
        "not a JWT": "opaque-garbage",
    }
    async with httpx2.AsyncClient() as http:
        for what, token in bad.items():
            headers = {**HEADERS, **({"Authorization": f"Bearer {token}"} if token else {})}
            answer = await http.post(gw.url, json=PING, headers=headers)
            assert answer.status_code == 401, what
            challenge = answer.headers["www-authenticate"]
            assert challenge.startswith("Bearer ") and f'resource_metadata="{metadata}"' in challenge, what
        good = await http.post(
            gw.url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {auth_server.token(gw.url)}"}
        )
        assert good.status_code == 200
    assert not any("Traceback" in line for line in gw.stderr)


async def test_the_flags_win_over_the_file_key_by_key(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    config = make_config('[serve.oauth]\nissuer = "https://not-this.example"\nrequired_scopes = ["mcp:use"]\n')
    gw = oauth_gateway(config)  # --oauth-issuer over the file's, --oauth-audience where it has none
    async with httpx2.AsyncClient() as http:
        without = auth_server.token(gw.url, "other")
        answer = await http.post(gw.url, json=PING, headers={**HEADERS, "Authorization": f"Bearer {without}"})
        assert answer.status_code == 403  # the file's required scope still holds
    async with http_client(gw.url, token=auth_server.token(gw.url, "mcp:use")) as client:
        assert "ToolSearch" in await names(client)


async def test_the_clock_leeway_applies_to_exp(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    gw = oauth_gateway(make_config("[serve.oauth]\nleeway = 60\n"))
    async with httpx2.AsyncClient() as http:
        for ttl, status in ((-20, 200), (-180, 401)):  # expired 20 s ago: within the leeway; 3 minutes: not
            token = auth_server.token(gw.url, ttl=ttl)
            answer = await http.post(gw.url, json=INITIALIZE, headers={**HEADERS, "Authorization": f"Bearer {token}"})
            assert answer.status_code == status, (ttl, answer.text)


async def test_a_missing_required_scope_gets_403(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    config = make_config('[serve.oauth]\nissuer = "x"\naudience = "x"\nrequired_scopes = ["mcp:use"]\n')
    gw = oauth_gateway(config)
    async with httpx2.AsyncClient() as http:
        without = auth_server.token(gw.url, "other")
        answer = await http.post(gw.url, json=PING, headers={**HEADERS, "Authorization": f"Bearer {without}"})
        assert answer.status_code == 403
        assert 'error="insufficient_scope"' in answer.headers["www-authenticate"]
    async with http_client(gw.url, token=auth_server.token(gw.url, "mcp:use")) as client:
        assert "ToolSearch" in await names(client)


async def test_keys_that_cannot_be_fetched_let_nobody_in(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    from support.gr_testutil import free_port

    dead = f"http://127.0.0.1:{free_port()}/jwks"
    gw = oauth_gateway(make_config(f'[serve.oauth]\nissuer = "x"\naudience = "x"\njwks_url = "{dead}"\n'))
    token = auth_server.token(gw.url, "tools:time")  # right in every way, but its key cannot be checked
    async with httpx2.AsyncClient() as http:
        answer = await http.post(gw.url, json=PING, headers={**HEADERS, "Authorization": f"Bearer {token}"})
    assert answer.status_code == 401


async def test_a_caller_without_the_scope_never_sees_nor_runs_the_scoped_tools(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    gw = oauth_gateway(make_config(SCOPES, strategy="inject"))
    plain = auth_server.token(gw.url, "tools:gitlog", sub="bob")
    async with http_client(gw.url, token=plain) as bob:
        listed = await names(bob)
        assert "ToolSearch" in listed and not any(n.startswith("time__") for n in listed)
        instructions = bob.init.instructions or ""  # the listing of what can be found
        assert "git__git_status" in instructions and "time__" not in instructions
        searched = await bob.call_tool("ToolSearch", {"query": "current time in a time zone"})
        assert "time__" not in text(searched)
        selected = await bob.call_tool("ToolSearch", {"query": "select:time__get_current_time,time__convert_time"})
        assert "time__" not in unquoted(text(selected), "select time__get_current_time, time__convert_time")
        grouped = await bob.call_tool("ToolSearch", {"query": "group:mcp:time"})
        assert "time__" not in text(grouped)
        loaded = await bob.call_tool("load_tools", {"group_id": "mcp:time"})
        assert "time__get_current_time" not in text(loaded).replace("'time__get_current_time'", "")
        assert not any(n.startswith("time__") for n in await names(bob))
        direct = await bob.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
        assert direct.is_error and "Asia/Tokyo" not in text(direct)
        dispatched = await bob.call_tool(
            "deferred_tool_call", {"tool_name": "time__get_current_time", "arguments": {"timezone": "Asia/Tokyo"}}
        )
        assert dispatched.is_error and "Asia/Tokyo" not in text(dispatched)
        # the scope bob has: git's log is his
        log = await bob.call_tool("ToolSearch", {"query": "select:git__git_log"})
        assert "git__git_log" in text(log)
    full = auth_server.token(gw.url, "tools:time", sub="carol")
    async with http_client(gw.url, token=full) as carol:
        searched = await carol.call_tool("ToolSearch", {"query": "current time in a time zone"})
        assert "time__get_current_time" in text(searched)
        called = await carol.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
        assert not called.is_error and "Asia/Tokyo" in text(called)
        gitlog = await carol.call_tool("ToolSearch", {"query": "select:git__git_log"})
        assert "git__git_log" not in unquoted(text(gitlog), "select git__git_log")


async def test_priors_are_learned_per_principal(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    extra = '[serve.oauth]\nissuer = "x"\naudience = "x"\nper_principal = true\n'
    gw = oauth_gateway(make_config(extra, agent_id="team"))
    async with http_client(gw.url, token=auth_server.token(gw.url, sub="dana")) as dana:
        await dana.call_tool(
            "deferred_tool_call", {"tool_name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
        )
    assert gw.stop() == 0
    exported = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "priors", "export", "team.dana"], capture_output=True, text=True
    )
    assert exported.returncode == 0, exported.stderr
    assert "time__get_current_time" in json.dumps(json.loads(exported.stdout))


def test_oauth_settings_that_cannot_work_are_refused_with_where(make_config: Callable[..., Path]) -> None:
    argv = [sys.executable, "-m", "greenroom.cli", "serve"]
    cases = {
        ("--oauth-issuer", "http://idp.example.com", "--oauth-audience", "https://gw.example.com/mcp"): "https",
        ("--oauth-issuer", "https://idp.example.com"): "OAuth needs --oauth-audience (or audience in [serve.oauth])",
        ("--oauth-issuer", "https://idp.example.com", "--oauth-audience", "gw"): "audience",
    }
    config = make_config()
    for flags, said in cases.items():
        done = subprocess.run([*argv, str(config), "--transport", "http", *flags], capture_output=True, text=True)
        assert done.returncode == 2 and said in done.stderr, done.stderr
    rules = '[serve.oauth]\nissuer = "https://i.example"\naudience = "https://a.example/mcp"\n'
    rules += 'scopes = { "s" = ["bad["] }\n'
    scoped = make_config(rules, strategy="inject")
    done = subprocess.run([*argv, str(scoped), "--transport", "http"], capture_output=True, text=True)
    assert done.returncode == 2 and "[serve.oauth] scopes.s[0]" in done.stderr, done.stderr
    stdio = subprocess.run(
        [*argv, str(config), "--oauth-issuer", "https://i.example", "--oauth-audience", "https://a.example/mcp"],
        capture_output=True,
        text=True,
    )
    assert stdio.returncode == 2 and "--transport http only" in stdio.stderr


async def test_sessionless_callers_each_keep_a_run_of_their_own(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    # MCP 2026-07-28: no sessions; each caller (principal and scopes) keeps its own run,
    # so a second caller is neither refused nor shown the first one's view
    from mcp.client.client import Client
    from mcp.client.streamable_http import streamable_http_client

    gw = oauth_gateway(make_config(SCOPES))
    now = {"tool_name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
    seen: dict[str, tuple[set[str], bool]] = {}
    for who, scopes in (("alice", "tools:time"), ("bob", "")):
        token = auth_server.token(gw.url, scopes, sub=who)
        async with (
            httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30.0) as http,
            Client(streamable_http_client(gw.url, http_client=http), mode="2026-07-28") as client,
        ):
            listed = await client.list_tools()
            assert listed.cache_scope == "private"  # what is listed depends on the caller
            called = await client.call_tool("deferred_tool_call", now)
            seen[who] = ({t.name for t in listed.tools}, called.is_error)
    assert seen["alice"][1] is False  # alice may use the time server
    assert seen["bob"][1] is True  # bob may not, and is not refused as "another token"


async def test_a_connection_stays_with_the_caller_it_was_opened_by(
    make_config: Callable[..., Path], oauth_gateway: Callable[..., OAuthGateway], auth_server: AuthServer
) -> None:
    # MCP 2025-11-25: a connection's run was made with its first caller's view; a request on
    # it with a token of other scopes is refused, never answered with that view (the SDK
    # itself answers another principal's request on the session "Session not found")
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared.exceptions import MCPError

    gw = oauth_gateway(make_config(SCOPES))
    now = {"tool_name": "time__get_current_time", "arguments": {"timezone": "UTC"}}
    alice = auth_server.token(gw.url, "tools:time", sub="alice")
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {alice}"}, timeout=30.0) as http,
        streamable_http_client(gw.url, http_client=http) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        assert not (await session.call_tool("deferred_tool_call", now)).is_error
        http.headers["Authorization"] = f"Bearer {auth_server.token(gw.url, '', sub='alice')}"  # no tools:time
        with pytest.raises(MCPError, match="another token's principal or scopes"):
            await session.call_tool("deferred_tool_call", now)
