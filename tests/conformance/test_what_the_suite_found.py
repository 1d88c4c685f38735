"""What the conformance suite found in greenroom, checked without the suite (no Node
needed): a bare-named server's prompts keep their names through the gateway; a
pre-registered confidential client authenticates as the authorization server allows;
``--unattended`` follows the authorization server's redirects to the code, and says so
when the server wants a person instead."""

from __future__ import annotations

import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")

from mcp.client.auth import OAuthFlowError
from support.serve_testutil import stdio_gateway

from greenroom.mcp.oauth.login import Callback, approve_unattended
from greenroom.mcp.oauth.provider import token_auth_method

REDIRECT = "http://127.0.0.1:0/callback"


@pytest.mark.slow
@pytest.mark.anyio
async def test_a_bare_servers_prompts_and_templates_keep_their_names(gateway_config: Path) -> None:
    async with stdio_gateway(gateway_config) as client:
        prompts = [p.name for p in (await client.list_prompts()).prompts]
        assert "test_simple_prompt" in prompts and not any("__" in name for name in prompts)
        got = await client.get_prompt("test_prompt_with_arguments", {"arg1": "one", "arg2": "two"})
        assert "one" in str(got.messages) and "two" in str(got.messages)
        prefixed = await client.get_prompt("everything__test_simple_prompt")  # the prefixed name still works
        assert prefixed.messages
        templates = (await client.list_resource_templates()).resource_templates
        assert [t.name for t in templates] == ["template-data"]


def test_a_client_secret_goes_as_the_authorization_server_allows() -> None:
    assert token_auth_method(None) == "client_secret_basic"  # RFC 8414's default
    assert token_auth_method(["client_secret_basic"]) == "client_secret_basic"
    assert token_auth_method(["none", "client_secret_post", "client_secret_basic"]) == "client_secret_basic"
    assert token_auth_method(["client_secret_post"]) == "client_secret_post"


class _AuthorizationServer(BaseHTTPRequestHandler):
    """``/authorize`` hops once, then approves; ``/login`` is a sign-in page."""

    def do_GET(self) -> None:
        path, _, query = self.path.partition("?")
        if path == "/authorize":
            self.send_response(302)
            self.send_header("Location", f"/approve?{query}")
        elif path == "/approve":
            state = dict(p.split("=", 1) for p in query.split("&") if "=" in p).get("state", "")
            self.send_response(303)
            self.send_header("Location", f"{REDIRECT}?code=the-code&state={state}")
        else:
            self.send_response(200)
            self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        return


@pytest.fixture
def authorization_server() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _AuthorizationServer)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join(5)


@pytest.mark.anyio
async def test_unattended_follows_the_redirects_to_the_code(authorization_server: str) -> None:
    callback = Callback(state="s1")
    await approve_unattended(f"{authorization_server}/authorize?client_id=c&state=s1", REDIRECT, callback)
    answer = callback.answer()
    assert answer.code == "the-code" and answer.state == "s1"


@pytest.mark.anyio
async def test_unattended_says_when_the_server_wants_a_person(authorization_server: str) -> None:
    with pytest.raises(OAuthFlowError, match="wants a person to sign in"):
        await approve_unattended(f"{authorization_server}/login?state=s1", REDIRECT, Callback())


def test_probe_takes_a_calls_arguments_as_a_json_object() -> None:
    argv = [sys.executable, "-m", "greenroom.cli", "mcp", "probe", "http://127.0.0.1:9/mcp", "--call", "add"]
    for given, said in (("[1, 2]", "must be a JSON object"), ("{a: 1}", "is not JSON")):
        run = subprocess.run([*argv, "--arguments", given], capture_output=True, text=True, timeout=60)
        assert run.returncode == 2 and said in " ".join(run.stderr.split()), run.stderr
