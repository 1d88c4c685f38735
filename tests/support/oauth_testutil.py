"""A real OAuth authorization server on loopback for the OAuth tests: the npm package
``oauth2-mock-server`` driven by ``oauth_as.mjs`` (tokens whose audience is the RFC 8707
resource asked for, dynamic client registration, test controls).

``.ci/run`` installs the package into ``.ci/node`` and names it in ``GREENROOM_OAUTH_MOCK``;
outside CI the tests skip with the command that installs it when it is not there.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from support.gr_testutil import free_port, lines_until_ready
from support.serve_testutil import HttpGateway

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = Path(__file__).resolve().parent / "oauth_as.mjs"
PACKAGE = ROOT / ".ci" / "node" / "node_modules" / "oauth2-mock-server"
INSTALL = "npm install --prefix .ci/node --no-audit --no-fund oauth2-mock-server@9.3.0"


def mock_package() -> Path:
    """The package's folder, or a skip (a failure in CI) saying how to install it."""
    found = Path(os.environ.get("GREENROOM_OAUTH_MOCK") or PACKAGE)
    in_ci = bool(os.environ.get("GREENROOM_CI") or os.environ.get("CI"))
    if shutil.which("node") is None:
        if in_ci:
            pytest.fail("Node.js is not installed: the OAuth tests need it for oauth2-mock-server")
        pytest.skip("needs Node.js (for the oauth2-mock-server authorization server)")
    if not (found / "dist" / "index.mjs").exists():
        if in_ci:
            pytest.fail(f"oauth2-mock-server is not installed: .ci/run installs it ({INSTALL})")
        pytest.skip(f"needs oauth2-mock-server: {INSTALL}")
    return found


class AuthServer:
    """``oauth_as.mjs`` as a subprocess; ``issuer`` once it said it is ready."""

    def __init__(self) -> None:
        self.port = free_port()
        self.issuer = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "OAUTH2_MOCK_SERVER": str(mock_package())}
        self.proc = subprocess.Popen(
            ["node", str(SCRIPT), str(self.port)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            env=env,
            start_new_session=True,
        )
        self.output = lines_until_ready(self.proc.stdout, "ready ", 30)
        if self.proc.poll() is not None or not any(s.startswith("ready ") for s in self.output):
            self.stop()
            raise RuntimeError("the authorization server did not start:\n" + "".join(self.output))

    def token(
        self,
        resource: str | None,
        scope: str = "",
        *,
        sub: str = "alice",
        ttl: int | None = None,
        client_id: str = "test-client",
    ) -> str:
        """An access token from the client-credentials grant, for ``resource``."""
        import httpx2

        data: dict[str, Any] = {"grant_type": "client_credentials", "client_id": client_id, "sub": sub}
        if resource is not None:
            data["resource"] = resource
        if scope:
            data["scope"] = scope
        if ttl is not None:
            data["ttl"] = str(ttl)
        response = httpx2.post(f"{self.issuer}/token", data=data, timeout=10)
        response.raise_for_status()
        return str(response.json()["access_token"])

    def control(self, **settings: Any) -> None:
        import httpx2

        httpx2.post(f"{self.issuer}/test/control", json=settings, timeout=10).raise_for_status()

    def grants(self) -> list[dict[str, Any]]:
        import httpx2

        response = httpx2.get(f"{self.issuer}/test/grants", timeout=10)
        response.raise_for_status()
        return list(response.json())

    def stop(self) -> None:
        terminate(self.proc)


class OAuthGateway(HttpGateway):
    """``greenroom serve --transport http`` with OAuth, its audience its own URL."""

    def __init__(self, config: Path, issuer: str, *extra: str, env: dict[str, str] | None = None) -> None:
        super().__init__(config, *extra, env=env, oauth_issuer=issuer)


class Upstream:
    """An MCP server behind OAuth (the SDK's ``MCPServer`` with its auth settings and the
    gateway's ``JwtVerifier``), as a subprocess on loopback: ``whoami``, and ``leak``
    that echoes the access token."""

    def __init__(self, issuer: str) -> None:
        import socket
        import sys
        import time

        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "support.oauth_testutil", "upstream", str(self.port), issuer],
            cwd=ROOT / "tests",  # where ``support`` is a package
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and self.proc.poll() is None:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", self.port)) == 0:
                    return
            time.sleep(0.05)  # readiness poll: the server says nothing when it listens
        self.stop()
        raise RuntimeError("the upstream server did not start")

    def stop(self) -> None:
        terminate(self.proc)


def terminate(proc: subprocess.Popen[bytes]) -> None:
    """End a helper process: politely, then for good."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def authorize(url: str) -> str:
    """What a browser does with an authorization URL at oauth2-mock-server (which approves
    at once): the URL it is redirected to, with the code."""
    import httpx2

    response = httpx2.get(url, follow_redirects=False, timeout=10)
    assert response.status_code in (301, 302, 303, 307), response.text
    return str(response.headers["location"])


def _upstream_main(port: int, issuer: str) -> None:
    import uvicorn
    from mcp.server.auth.middleware.auth_context import get_access_token
    from mcp.server.auth.settings import AuthSettings
    from mcp.server.mcpserver import MCPServer

    from greenroom_gateway.config import ServeOAuthConfig
    from greenroom_gateway.oauth.tokens import JwtVerifier

    url = f"http://127.0.0.1:{port}/mcp"
    oauth = ServeOAuthConfig(issuer=issuer, audience=url)
    # strings, not AnyHttpUrl: the settings keep a root issuer without the trailing slash that
    # AnyHttpUrl adds, so the metadata names the issuer exactly as the server's own does
    settings = AuthSettings(issuer_url=issuer, resource_server_url=url, validate_token_resource=True)  # type: ignore[arg-type]
    server: Any = MCPServer("secured", token_verifier=JwtVerifier(oauth), auth=settings)

    @server.tool()
    def whoami() -> str:
        """Who the access token says is calling."""
        token = get_access_token()
        return f"subject {token.subject if token else None}"

    @server.tool()
    def leak() -> str:
        """A careless tool: echoes the caller's access token."""
        token = get_access_token()
        return f"your token is {token.token if token else None}"

    uvicorn.run(server.streamable_http_app(), host="127.0.0.1", port=port, log_level="warning")


if __name__ == "__main__":
    import sys

    if sys.argv[1:2] == ["upstream"]:
        sys.path.insert(0, str(ROOT / "core"))
        _upstream_main(int(sys.argv[2]), sys.argv[3])
