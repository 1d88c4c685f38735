"""Without the ``mcp`` extra: configs with MCP servers still check, and building or
importing the MCP source says what to install. The SDK is hidden from a subprocess by an
import blocker, so this runs whether or not the extra is installed here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

# Runs first in a fresh interpreter: the SDK (and its HTTP client) cannot be imported there.
NO_SDK = """
import importlib.abc, json, sys

SDK = ("mcp", "mcp_types", "httpx2")

class NoSdk(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in SDK:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

sys.meta_path.insert(0, NoSdk())
"""

SCRIPT = (
    NO_SDK
    + """
cfg = sys.argv[1]
out = {}

import greenroom.mcp.checks
from typer.testing import CliRunner
from greenroom.cli import app

result = CliRunner().invoke(app, ["config", "check", cfg])
out["check"] = [result.exit_code, " ".join(result.output.split())]
out["sdk_after_check"] = sorted(m for m in sys.modules if m.partition(".")[0] in SDK)
try:
    from greenroom.mcp import McpToolset
except ImportError as exc:
    out["import"] = str(exc)

from greenroom.compose.build import build_runtime
from greenroom.config import ConfigError

try:
    build_runtime(cfg)
except ConfigError as exc:
    out["build"] = [exc.path, exc.message]
print(json.dumps(out))
"""
)


def run_without_sdk(cfg: Path) -> dict[str, Any]:
    proc = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(cfg)], capture_output=True, text=True, timeout=120, cwd=cfg.parent
    )
    assert proc.returncode == 0, proc.stderr
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_a_config_with_mcp_servers_checks_and_builds_say_what_to_install(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\n\n'
        '[[tools.mcp]]\nname = "time"\ncommand = "mcp-server-time"\n\n'
        '[[tools.mcp]]\nname = "docs"\nurl = "https://docs.example.com/mcp"\n'
    )
    (tmp_path / "script.jsonl").write_text('{"text": "hi"}\n')  # a check builds the model too
    out = run_without_sdk(cfg)
    code, text = out["check"]
    assert code == 0 and text.startswith(f"ok {cfg}"), text
    assert out["sdk_after_check"] == []  # checking a config never imports the SDK
    assert "pip install 'greenroom[mcp]'" in out["import"] and "No module named" in out["import"]
    path, message = out["build"]
    assert path == "tools.mcp"
    # the advice once, with the module that is missing
    assert message.count("pip install 'greenroom[mcp]'") == 1 and "No module named" in message


def test_server_rules_are_checked_without_the_sdk(tmp_path: Path) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[agent]\nmodel = "scripted:script.jsonl"\n\n[[tools.mcp]]\nname = "time"\n')
    code, text = run_without_sdk(cfg)["check"]
    assert code == 2
    assert f"{cfg}: tools.mcp[0]: server 'time' needs 'command'" in text


@pytest.mark.parametrize(
    "command",
    [
        ["serve", "{cfg}"],
        ["serve", "{cfg}", "--transport", "http"],
        ["mcp", "probe", "https://docs.example.com/mcp"],
        ["mcp", "login", "{cfg}", "docs"],
    ],
)
def test_commands_that_speak_mcp_say_what_to_install_in_one_line(tmp_path: Path, command: list[str]) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text(
        '[agent]\nmodel = "scripted:"\n\n[[tools.mcp]]\nname = "docs"\nurl = "https://docs.example.com/mcp"\n'
    )
    argv = [arg.format(cfg=cfg) for arg in command]
    script = NO_SDK + "from greenroom.cli.app import main\nmain(sys.argv[1:])\n"
    proc = subprocess.run(
        [sys.executable, "-c", script, *argv], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert said.startswith(f"error: greenroom {argv[0]}") and said.count("pip install 'greenroom[mcp]'") == 1, said
    assert said.endswith("(No module named 'httpx2')"), said  # one message, and which module is missing
