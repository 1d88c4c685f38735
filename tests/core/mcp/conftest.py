"""Fixtures for the MCP tests: real servers (mcp-server-time, mcp-server-git, a local
streamable-HTTP server), an isolated listing cache, and a way to find server processes."""

from __future__ import annotations

import copy
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from support.gr_testutil import free_port

from greenroom.config import McpServerConfig

HERE = Path(__file__).resolve().parent


@pytest.fixture(autouse=True)
def gr_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test gets its own state folder, so listing caches never leak between tests."""
    home = tmp_path / "gr-home"
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    return home


TOOL_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


@pytest.fixture
def tool_schema() -> dict[str, Any]:
    """The input schema every tool written by ``seed_cache`` has."""
    return copy.deepcopy(TOOL_SCHEMA)


@pytest.fixture
def seed_cache() -> Callable[..., None]:
    """``seed_cache(config, base_dir, tools, instructions=None)``: write a listing as an
    earlier process would have, so nothing needs to start."""
    from greenroom.mcp import McpListing, McpToolSpec, write_cached_listing

    def seed(config: McpServerConfig, base_dir: Path, tools: list[str], instructions: str | None = None) -> None:
        specs = tuple(McpToolSpec(name=t, description=f"The {t} tool.", input_schema=TOOL_SCHEMA) for t in tools)
        write_cached_listing(config, base_dir, McpListing(tools=specs, instructions=instructions, listed_at=1.0))

    return seed


def make_time_config(name: str = "time", **kw: Any) -> McpServerConfig:
    return McpServerConfig(name=name, command=sys.executable, args=("-m", "mcp_server_time"), **kw)


@pytest.fixture
def time_config() -> Callable[..., McpServerConfig]:
    """A factory of configs for the real mcp-server-time (stdio)."""
    pytest.importorskip("mcp_server_time", reason="needs mcp-server-time (pip install mcp-server-time)")
    return make_time_config


@pytest.fixture
def pids() -> Callable[[str], list[int]]:
    """``pids(marker)``: live child processes whose command line contains ``marker``."""
    return server_pids


def server_pids(marker: str) -> list[int]:
    """Live child processes of this test process whose command line contains ``marker``."""
    me = str(os.getpid())
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            # another process's name or arguments may be any bytes (a Latin-1 file name)
            stat = Path(f"/proc/{entry}/stat").read_bytes().decode(errors="replace")
            cmdline = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        # stat: "pid (comm) state ppid ..."; comm may hold spaces, so split after ")"
        fields = stat.rsplit(")", 1)[1].split()
        if fields[1] == me and fields[0] != "Z" and marker in cmdline:
            out.append(int(entry))
    return out


def wait_until(pred: Callable[[], bool], timeout: float = 10.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


@pytest.fixture
def all_stopped() -> Callable[[str], bool]:
    """``all_stopped(marker)``: True once no child process whose command line contains
    ``marker`` is alive (waits a bounded time for processes that are shutting down)."""
    return lambda marker: wait_until(lambda: not server_pids(marker), 10)


@pytest.fixture
def no_leftovers() -> Iterator[None]:
    """Fails the test if a server process it started, or an MCP host thread, is still
    alive afterwards."""
    before = set(server_pids("mcp_server"))
    yield
    assert wait_until(lambda: not (set(server_pids("mcp_server")) - before), 10), "an MCP server process was left"
    assert not [t for t in threading.enumerate() if t.name == "greenroom-mcp"], "an MCP host thread was left"


@pytest.fixture
def git_repo(tmp_path: Path) -> Path:
    """A fresh repository with one commit, for mcp-server-git."""
    pytest.importorskip("mcp_server_git", reason="needs mcp-server-git (pip install mcp-server-git)")
    if shutil.which("git") is None:
        pytest.skip("needs the git command")
    repo = tmp_path / "repo"
    repo.mkdir()
    git = [
        "git",
        "-c",
        "user.name=Greenroom Test",
        "-c",
        "user.email=test@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    subprocess.run([*git, "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run([*git, "-C", str(repo), "add", "README.md"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "first commit"], check=True)
    return repo


class HttpServer:
    """tests/core/mcp/http_server.py as a subprocess on a fixed loopback port."""

    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        proc = self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "http_server.py"), str(self.port)],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )

        def listening() -> bool:
            if proc.poll() is not None:
                return True  # exited: stop polling, report below
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return True
            except OSError:
                return False

        wait_until(listening, 20)  # bounded readiness poll, no fixed sleep
        if proc.poll() is not None:
            err = proc.stderr.read().decode() if proc.stderr else ""
            raise RuntimeError(f"the test HTTP server exited: {err}")

    def stop(self, sig: int = signal.SIGTERM) -> None:
        proc, self.proc = self.proc, None
        if proc is None:
            return
        if proc.poll() is None:
            os.killpg(proc.pid, sig)
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(5)
        if proc.stderr:
            proc.stderr.close()


@pytest.fixture
def http_server() -> Iterator[HttpServer]:
    """A running test HTTP server (``.url``; ``.stop()`` and ``.start()`` to fake a crash)."""
    server = HttpServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
