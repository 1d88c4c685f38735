"""Helpers for the gateway tests (tests/plugins/gateway): configs over the real reference
servers and rich_server.py, and ``greenroom serve`` as a subprocess that the SDK's own
client talks to, over stdio or streamable HTTP."""

from __future__ import annotations

import os
import runpy
import shutil
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest

from support.gr_testutil import free_port, lines_until_ready

SERVE_TESTS = Path(__file__).resolve().parents[1] / "plugins" / "gateway"
RICH_SERVER = SERVE_TESTS / "rich_server.py"
HOLD_SERVER = SERVE_TESTS / "hold_server.py"
RELAY_SERVER = SERVE_TESTS / "relay_server.py"
_rich = runpy.run_path(str(RICH_SERVER))  # its constants, to compare what came through
PNG: str = _rich["PNG"]
WAV: str = _rich["WAV"]


def servers_toml(repo: Path, marker: str, mark_file: Path) -> str:
    """git, time and rich; ``marker`` is in the rich server's command line (to find it)."""
    py = sys.executable
    return f"""
[[tools.mcp]]
name = "git"
command = {py!r}
args = ["-m", "mcp_server_git", "--repository", {str(repo)!r}]

[[tools.mcp]]
name = "time"
command = {py!r}
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]

[[tools.mcp]]
name = "rich"
command = {py!r}
args = [{str(RICH_SERVER)!r}, {marker!r}]
env = {{ RICH_MARK_FILE = {str(mark_file)!r} }}
"""


def hold_config(folder: Path, extra: str = "", agent_id: str = "ops") -> Path:
    """A config whose tools are hold_server.py's ``hold`` and ``echo``, eager, as Python
    tools of the gateway itself (``HOLD_DIR`` in its environment says where they mark)."""
    path = folder / f"{agent_id}.toml"
    path.write_text(
        f'[agent]\nid = "{agent_id}"\nmodel = "scripted:"\n'
        f"[tools]\npython = [{str(HOLD_SERVER) + ':TOOLS'!r}]\n"
        '[plugins.deferred-tools]\nnever_defer = ["hold", "echo"]\n' + extra,
        encoding="utf-8",
    )
    return path


def relay_config(folder: Path, extra: str = "") -> Path:
    """A config whose one upstream server is relay_server.py (``relay``, not deferred)."""
    path = folder / "gateway.toml"
    body = (
        f'[[tools.mcp]]\nname = "relay"\ncommand = {sys.executable!r}\nargs = [{str(RELAY_SERVER)!r}]\ndefer = false\n'
    )
    path.write_text('[agent]\nid = "gw"\nmodel = "scripted:"\n\n' + body + extra, encoding="utf-8")
    return path


def learning_config(tmp_path: Path) -> Path:
    """A learning agent (``learner``) in front of the real time server, deferred, with its
    priors in an SQLite store in ``tmp_path`` (skips without mcp-server-time)."""
    pytest.importorskip("mcp_server_time", reason="needs mcp-server-time")
    config = tmp_path / "learner.toml"
    config.write_text(
        f"""
[agent]
id = "learner"
model = "scripted:"

[[tools.mcp]]
name = "time"
command = {sys.executable!r}
args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]

[plugins.deferred-tools]
enabled = true

[plugins.priors-persistence]
store = "sqlite:///{tmp_path / "priors.sqlite3"}"
""",
        encoding="utf-8",
    )
    return config


def priors_sessions(home: Path) -> int:
    """How many sessions the priors in ``home``'s SQLite store learned from (0: none)."""
    import json
    import sqlite3

    if not (home / "priors.sqlite3").exists():
        return 0
    with sqlite3.connect(home / "priors.sqlite3") as db:
        row = db.execute("SELECT doc FROM profiles WHERE key = ?", ("tool_priors",)).fetchone()
    return int(json.loads(row[0])["sessions"]) if row else 0


def serve_argv(config: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "greenroom.cli", "serve", str(config), *extra]


@asynccontextmanager
async def stdio_gateway(
    config: Path, *extra: str, on_message: Any = None, client: str = "test-client", **session: Any
) -> AsyncIterator[Any]:
    """An initialised SDK ``ClientSession`` to ``greenroom serve CONFIG`` over stdio
    (``session``: more of ``ClientSession``'s keywords, its callbacks say)."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp_types import Implementation

    params = StdioServerParameters(command=sys.executable, args=serve_argv(config, *extra)[1:], env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        kw: dict[str, Any] = {"client_info": Implementation(name=client, version="1"), **session}
        if on_message is not None:
            kw["message_handler"] = on_message
        async with ClientSession(read, write, **kw) as session:
            session.init = await session.initialize()  # type: ignore[attr-defined]
            yield session


class HttpGateway:
    """``greenroom serve --transport http`` as a subprocess; ready once it says where.
    ``oauth_issuer``: with OAuth, its audience its own URL."""

    def __init__(
        self, config: Path, *extra: str, env: dict[str, str] | None = None, oauth_issuer: str | None = None
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        if oauth_issuer is not None:
            extra = ("--oauth-issuer", oauth_issuer, "--oauth-audience", self.url, *extra)
        self.proc = subprocess.Popen(
            serve_argv(config, "--transport", "http", "--port", str(self.port), *extra),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            env={**os.environ, **(env or {})},
            start_new_session=True,
        )
        self.stderr = lines_until_ready(self.proc.stderr, "listening on", 60)
        if self.proc.poll() is not None or not any("listening on" in s for s in self.stderr):
            self.stop()
            raise RuntimeError("greenroom serve did not start:\n" + "".join(self.stderr))

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)  # the gateway alone: it stops its own servers
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(5)
        return self.proc.returncode


@asynccontextmanager
async def http_client(
    url: str, token: str | None = None, *, on_message: Any = None, **session: Any
) -> AsyncIterator[Any]:
    """An initialised SDK ``ClientSession`` over streamable HTTP (``session``: more of its keywords)."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(30.0)) as http,
        streamable_http_client(url, http_client=http) as (read, write),
    ):
        kw: dict[str, Any] = {"message_handler": on_message} if on_message is not None else {}
        async with ClientSession(read, write, **kw, **session) as client:
            client.init = await client.initialize()  # type: ignore[attr-defined]
            yield client


def inspector_binary() -> str | None:
    """The MCP Inspector's CLI, as ``.ci/run`` installs it (``GREENROOM_MCP_INSPECTOR``)."""
    found = os.environ.get("GREENROOM_MCP_INSPECTOR") or shutil.which("mcp-inspector")
    return found if found and Path(found).exists() else None


def processes_with(marker: str) -> list[int]:
    """Live processes whose command line holds ``marker`` (a test's own folder)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            state = (entry / "stat").read_text().split(") ", 1)[1][:1]
        except OSError:
            continue
        if marker in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def wait_until(pred: Any, timeout: float = 20.0) -> bool:
    """Poll ``pred`` until it holds (bounded readiness poll, not a fixed sleep)."""
    import time

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return bool(pred())
