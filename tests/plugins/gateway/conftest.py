"""Fixtures for the gateway tests: a state folder per test, a git repository, configs
over the real reference servers, and ``greenroom serve`` over HTTP (``serve_testutil``)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.serve_testutil import HttpGateway, servers_toml

pytest.importorskip("mcp_server_time", reason="needs mcp-server-time (pip install -e '.[dev]')")
pytest.importorskip("mcp_server_git", reason="needs mcp-server-git (pip install -e '.[dev]')")


@pytest.fixture(scope="session")
def shared(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One folder for the whole run: the git repository, every config, and the listings
    the upstream servers gave (a server's listing is cached by its command line and
    folder, so sharing them lets a gateway start without starting every server). The
    listings of ``make_config``'s servers are cached before any test: a gateway's
    instructions on its very first start, before a server was ever listed, lack that
    server's tools, and no test should depend on which test ran first."""
    folder = tmp_path_factory.mktemp("serve-shared")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", "-c", "commit.gpgsign=false"]
    repo = folder / "repo"
    subprocess.run([*git, "init", "-q", "-b", "main", str(repo)], check=True)
    (repo / "README.md").write_text("hello\n")
    subprocess.run([*git, "-C", str(repo), "add", "README.md"], check=True)
    subprocess.run([*git, "-C", str(repo), "commit", "-q", "-m", "first commit"], check=True)
    (folder / "configs").mkdir()
    (folder / "mcp-cache").mkdir()
    config = folder / "configs" / "listings.toml"
    config.write_text('[agent]\nid = "gw"\n' + servers_toml(repo, str(folder), folder / "slow.mark"), encoding="utf-8")
    home = folder / "listing-home"
    env = {**os.environ, "GREENROOM_HOME": str(home)}
    check = [sys.executable, "-m", "greenroom.cli", "config", "check", "--connect", str(config)]
    done = subprocess.run(check, capture_output=True, text=True, env=env, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for listing in (home / "mcp-cache").glob("*.jsonl"):
        shutil.copy2(listing, folder / "mcp-cache" / listing.name)
    return folder


@pytest.fixture
def gr_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, shared: Path) -> Iterator[Path]:
    """Each test gets its own state folder (its priors are its own), holding the listings
    cached so far; what it cached is shared with the tests after it."""
    home = tmp_path / "gr-home"
    shutil.copytree(shared / "mcp-cache", home / "mcp-cache")
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    yield home
    for listing in (home / "mcp-cache").glob("*.jsonl"):
        shutil.copy2(listing, shared / "mcp-cache" / listing.name)


@pytest.fixture
def git_repo(shared: Path) -> Path:
    """A repository with one commit, for mcp-server-git (read only: shared by the tests)."""
    return shared / "repo"


@pytest.fixture
def make_config(tmp_path: Path, shared: Path, gr_home: Path) -> Callable[..., Path]:
    """``make_config(extra="", strategy="dispatch", agent_id="gw", marker=None)``: a config
    serving git, time and rich; ``marker`` goes in the rich server's command line."""

    def make(extra: str = "", strategy: str = "dispatch", agent_id: str = "gw", marker: str | None = None) -> Path:
        path = shared / "configs" / f"{tmp_path.name}-{strategy}.toml"
        servers = servers_toml(shared / "repo", marker or str(shared), tmp_path / "slow.mark")
        path.write_text(
            f'[agent]\nid = "{agent_id}"\nmodel = "anthropic:claude-sonnet-4-5"\n'
            + servers
            + f'\n[plugins.deferred-tools]\nstrategy = "{strategy}"\n'
            + extra,
            encoding="utf-8",
        )
        return path

    return make


@pytest.fixture
def http_gateway() -> Iterator[Callable[..., HttpGateway]]:
    started: list[HttpGateway] = []

    def start(config: Path, *extra: str, env: dict[str, str] | None = None) -> HttpGateway:
        gw = HttpGateway(config, *extra, env=env)
        started.append(gw)
        return gw

    yield start
    for gw in started:
        gw.stop()
