"""greenroom as an OAuth 2.1 client of an upstream MCP server, against a real authorization
server on loopback (oauth2-mock-server, which approves every authorization at once) and an
upstream server made of the SDK's own auth components: ``greenroom mcp login`` (headless
and through the loopback redirect), the runtime using the stored tokens, a refresh of an
expired token without a new login, a failed refresh that asks for one, ``probe`` and
``logout``. No token, code or secret is ever printed."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
pytest.importorskip("jwt", reason="needs PyJWT (pip install -e '.[oauth]')")

from support.oauth_testutil import AuthServer, Upstream, authorize

from greenroom.compose.build import build_runtime
from greenroom.mcp.oauth.store import token_path

pytestmark = [pytest.mark.anyio, pytest.mark.slow]


@pytest.fixture(scope="module")
def auth_server() -> Iterator[AuthServer]:
    server = AuthServer()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def upstream(auth_server: AuthServer) -> Iterator[Upstream]:
    server = Upstream(auth_server.issuer)
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def normal_lifetimes(auth_server: AuthServer) -> Iterator[None]:
    auth_server.control(ttl=3600, failRefresh=False)
    yield
    auth_server.control(ttl=3600, failRefresh=False)


def write_config(folder: Path, url: str, tool: str = "whoami") -> Path:
    script = [{"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": f"secured__{tool}"}}]}]
    (folder / "script.jsonl").write_text("\n".join(json.dumps(t) for t in [*script, {"text": "done"}]) + "\n")
    path = folder / "agent.toml"
    path.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 4\n\n'
        f'[[tools.mcp]]\nname = "secured"\nurl = "{url}"\noauth = {{ scopes = ["mcp"] }}\n\n'
        "[plugins.deferred-tools]\nenabled = true\n"
    )
    return path


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "greenroom.cli", *args]


def login_headless(config: Path, auth_server: AuthServer) -> tuple[int, str, str]:
    """``greenroom mcp login --headless``, with the test as the person with the browser."""
    proc = subprocess.Popen(
        cli("mcp", "login", str(config), "secured", "--headless"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stderr is not None
    seen: list[str] = []
    for line in proc.stderr:
        seen.append(line)
        if line.startswith(f"{auth_server.issuer}/authorize?"):
            proc.stdin.write(authorize(line.strip()) + "\n")
            proc.stdin.flush()
            break
    out, err = proc.communicate(timeout=60)
    return proc.returncode, out, "".join(seen) + err


def stored(config_url: str) -> dict[str, Any]:
    return dict(json.loads(token_path("secured", config_url).read_text()))


async def whoami(config: Path) -> Any:
    rt = build_runtime(config)
    try:
        session = rt.session()
        await session.run("go")
        (answer,) = [m for m in session.messages if m.role == "tool"]
        return answer
    finally:
        await rt.aclose()


async def test_headless_login_then_the_runtime_lists_and_calls(
    tmp_path: Path, auth_server: AuthServer, upstream: Upstream
) -> None:
    config = write_config(tmp_path, upstream.url)
    code, out, err = login_headless(config, auth_server)
    assert code == 0, err
    assert "logged in to MCP server 'secured'" in err and "2 tools" in out
    path = token_path("secured", upstream.url)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    record = stored(upstream.url)
    assert record["issuer"] == auth_server.issuer
    tokens = record["tokens"]
    for secret in (tokens["access_token"], tokens["refresh_token"]):
        assert secret not in out and secret not in err
    grants = [g["grant_type"] for g in auth_server.grants()]
    assert "authorization_code" in grants
    answer = await whoami(config)
    assert not answer.is_error and "subject" in answer.content, answer.content
    leaked = await whoami(write_config(tmp_path, upstream.url, tool="leak"))
    assert "your token is ***" in leaked.content and tokens["access_token"] not in leaked.content


async def test_an_expired_token_is_refreshed_without_a_login(
    tmp_path: Path, auth_server: AuthServer, upstream: Upstream
) -> None:
    config = write_config(tmp_path, upstream.url)
    auth_server.control(ttl=1)  # the login's access token is expired by the time it is used
    code, _, err = login_headless(config, auth_server)
    assert code == 0, err
    old = stored(upstream.url)
    auth_server.control(ttl=3600)
    # the stored expiry says it is stale: the provider refreshes before the first request
    path = token_path("secured", upstream.url)
    record = json.loads(path.read_text())
    record["expires_at"] = 1.0  # long past
    path.write_text(json.dumps(record))
    before = len(auth_server.grants())
    answer = await whoami(config)
    assert not answer.is_error, answer.content
    new = [g["grant_type"] for g in auth_server.grants()[before:]]
    assert new == ["refresh_token"], new
    after = stored(upstream.url)
    assert after["tokens"]["access_token"] != old["tokens"]["access_token"]
    assert after["expires_at"] > old["expires_at"]


async def test_a_failed_refresh_asks_for_a_login_naming_the_server(
    tmp_path: Path, auth_server: AuthServer, upstream: Upstream
) -> None:
    config = write_config(tmp_path, upstream.url)
    code, _, err = login_headless(config, auth_server)
    assert code == 0, err
    path = token_path("secured", upstream.url)
    record = json.loads(path.read_text())
    record["expires_at"] = 1.0  # long past
    path.write_text(json.dumps(record))
    auth_server.control(failRefresh=True)
    answer = await whoami(config)
    assert answer.is_error
    assert "'secured' needs a login" in answer.content and "greenroom mcp login" in answer.content
    assert record["tokens"]["refresh_token"] not in answer.content


def test_the_runtime_never_logs_in_by_itself(tmp_path: Path, upstream: Upstream) -> None:
    config = write_config(tmp_path, upstream.url)
    run = subprocess.run(cli("config", "check", str(config), "--connect"), capture_output=True, text=True, timeout=60)
    assert run.returncode != 0
    assert "'secured' needs a login (OAuth): run `greenroom mcp login CONFIG secured`" in " ".join(run.stderr.split())


def test_login_through_the_loopback_redirect_then_logout(
    tmp_path: Path, auth_server: AuthServer, upstream: Upstream
) -> None:
    config = write_config(tmp_path, upstream.url)
    proc = subprocess.Popen(
        cli("mcp", "login", str(config), "secured", "--no-browser"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if line.startswith(f"{auth_server.issuer}/authorize?"):
            import httpx2

            # the browser: to the authorization server, then back to greenroom's listener
            landing = httpx2.get(line.strip(), follow_redirects=True, timeout=10)
            assert landing.status_code == 200 and "Signed in" in landing.text
            break
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert token_path("secured", upstream.url).exists()
    out = subprocess.run(cli("mcp", "logout", str(config), "secured"), capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and "logged out of MCP server 'secured'" in out.stderr
    assert not token_path("secured", upstream.url).exists()


def test_probe_lists_the_tools_after_a_login(auth_server: AuthServer, upstream: Upstream) -> None:
    proc = subprocess.Popen(
        cli("mcp", "probe", upstream.url, "--json", "--headless"),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdin is not None and proc.stderr is not None
    for line in proc.stderr:
        if line.startswith(f"{auth_server.issuer}/authorize?"):
            proc.stdin.write(authorize(line.strip()) + "\n")
            proc.stdin.flush()
            break
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    listing = json.loads(out)
    assert listing["server"] == "secured" and sorted(t["name"] for t in listing["tools"]) == ["leak", "whoami"]
    again = subprocess.run(cli("mcp", "probe", upstream.url), capture_output=True, text=True, timeout=60)
    assert again.returncode == 0, again.stderr  # the stored tokens: no second login
    assert "whoami" in again.stdout and "Who the access token says" in again.stdout


def test_a_pre_registered_client_logs_in_and_its_secret_is_never_stored(
    tmp_path: Path, auth_server: AuthServer, upstream: Upstream, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "pre-registered-client-secret-4711"
    monkeypatch.setenv("UPSTREAM_CLIENT_SECRET", secret)
    config = write_config(tmp_path, upstream.url)
    text = config.read_text().replace(
        'oauth = { scopes = ["mcp"] }',
        'oauth = { client_id = "greenroom-test", client_secret_env = "UPSTREAM_CLIENT_SECRET", scopes = ["mcp"] }',
    )
    config.write_text(text)
    code, out, err = login_headless(config, auth_server)
    assert code == 0, err
    saved = token_path("secured", upstream.url).read_text()
    assert secret not in saved and "client_info" not in json.loads(saved)
    assert secret not in out + err and "client_id=greenroom-test" in err


def test_a_secret_variable_that_is_not_set_is_named(tmp_path: Path, upstream: Upstream) -> None:
    config = write_config(tmp_path, upstream.url)
    text = config.read_text().replace(
        'oauth = { scopes = ["mcp"] }', 'oauth = { client_id = "c", client_secret_env = "GR_UNSET_SECRET_VAR" }'
    )
    config.write_text(text)
    env = {k: v for k, v in os.environ.items() if k != "GR_UNSET_SECRET_VAR"}
    run = subprocess.run(
        cli("mcp", "login", str(config), "secured"), capture_output=True, text=True, env=env, timeout=60
    )
    said = " ".join(run.stderr.split())
    assert run.returncode == 1
    assert "'secured'" in said and "'GR_UNSET_SECRET_VAR', which is not set" in said, said
