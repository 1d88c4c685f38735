"""The command line with one installed broken distribution per failure kind: each is listed
as failed with its reason, and nothing else notices until a config asks for one."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

CLI = Callable[..., subprocess.CompletedProcess[str]]

# name -> (kind, what the message must say besides distribution and entry point)
BROKEN = {
    "async-observer": ("bad-hook", "hook greenroom_event: is an 'async def', but events are delivered as they happen"),
    "bad-hook-arg": ("bad-hook", "hook greenroom_before_inference: argument 'requst' is not one the hook passes"),
    "bad-hook-name": ("unknown-hook", "hook greenroom_befor_inference: no such hook is declared"),
    "bad-import": ("import", "No module named 'greenroom_dependency_that_is_not_installed'"),
    "dataclass-config": ("bad-config-class", "DataclassConfig is a dataclass, not an attrs class"),
    "not-a-plugin": ("not-a-plugin", "greenroom_not_a_plugin.NotAPlugin does not subclass greenroom.Plugin"),
    "raising-ctor": ("start", "the constructor raised RuntimeError: GREENROOM_RAISING_CTOR_TOKEN is not set"),
}


def test_plugins_lists_each_broken_distribution_as_failed_with_its_reason(greenroom_cli: CLI) -> None:
    out = greenroom_cli("plugins", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    for name, (kind, says) in BROKEN.items():
        row = rows[name]
        assert row["status"] == "failed", name
        assert row["error"]["kind"] == kind, name
        message = row["error"]["message"]
        assert f"distribution {row['distribution']} 0.1.0" in message, message
        assert f"entry point '{row['entry_point']}'" in message and row["entry_point"].startswith(name), message
        assert says in message, message
    assert "did you mean 'request'?" in rows["bad-hook-arg"]["error"]["message"]
    assert "did you mean greenroom_before_inference?" in rows["bad-hook-name"]["error"]["message"]
    # the healthy ones keep their status
    assert rows["example"]["status"] == "opt-in" and rows["example"]["version"] == "1.2.3"
    assert rows["scripted"]["status"] == "enabled" and rows["scripted"]["error"] is None
    assert rows["broken-import"]["status"] == "failed"
    assert rows["broken-hook"]["status"] == "opt-in"

    table = greenroom_cli("plugins")
    assert table.returncode == 0
    assert "failed" in table.stdout
    assert "plugin 'bad-hook-arg' failed (bad-hook): distribution greenroom-bad-hook-arg" in table.stderr


@pytest.mark.parametrize("command", ["priors", "rank", "demo"])
def test_plugin_commands_survive_broken_plugins(greenroom_cli: CLI, command: str) -> None:
    out = greenroom_cli(command, "--help")
    assert out.returncode == 0, out.stderr
    assert "Usage: greenroom " + command in out.stdout
    assert "No such command" not in out.stderr and "Traceback" not in out.stderr


def test_config_check_inspect_and_run_work_when_no_broken_plugin_is_asked_for(
    greenroom_cli: CLI, tmp_path: Path
) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[agent]\nmodel = "scripted"\n[plugins]\ndisable = ["bad-import"]\n')
    check = greenroom_cli("config", "check", str(cfg))
    assert check.returncode == 0, check.stderr
    inspected = greenroom_cli("inspect", str(cfg), "--json")
    assert inspected.returncode == 0, inspected.stderr
    assert json.loads(inspected.stdout)["tools"]
    run = greenroom_cli("run", str(cfg), "hello", "-q")
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "(scripted) You said: hello"
    # the one that fails only when started is on by default: skipped with a warning
    assert "plugin 'raising-ctor' failed to start" in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize(
    ("asks", "where", "says"),
    [
        ('[plugins]\nenable = ["bad-hook-arg"]\n', "plugins.enable[0]", BROKEN["bad-hook-arg"][1]),
        ('[plugins]\nenable = ["raising-ctor"]\n', "plugins.enable[0]", BROKEN["raising-ctor"][1]),
        ("[plugins.dataclass-config]\nlevel = 2\n", "plugins.dataclass-config", BROKEN["dataclass-config"][1]),
    ],
)
def test_asking_for_a_broken_plugin_is_a_config_error_with_its_load_error(
    greenroom_cli: CLI, tmp_path: Path, asks: str, where: str, says: str
) -> None:
    cfg = tmp_path / "agent.toml"
    cfg.write_text('[agent]\nmodel = "scripted"\n' + asks)
    out = greenroom_cli("run", str(cfg), "hello")
    assert out.returncode == 2, out.stderr
    message = " ".join(out.stderr.split())  # rich wraps long lines
    assert f"agent.toml: {where}: plugin " in message
    assert "distribution greenroom-" in message and "entry point '" in message
    assert says in message and "unknown plugin" not in message
    assert "Traceback" not in out.stderr


def test_config_section_of_an_installed_plugin_is_validated(greenroom_cli: CLI, tmp_path: Path) -> None:
    cfg = tmp_path / "a.toml"
    cfg.write_text('[plugins.example]\nlevel = "high"\n')
    out = greenroom_cli("config", "check", str(cfg))
    assert out.returncode == 2
    assert "plugins.example.level: expected an integer, got string 'high'" in out.stderr
    cfg.write_text("[plugins.example]\nlevel = 3\n")
    assert greenroom_cli("config", "check", str(cfg)).returncode == 0
    cfg.write_text("[plugins.broken-import]\nx = 1\n")
    out = greenroom_cli("config", "check", str(cfg))
    assert "plugins.broken-import: plugin 'broken-import' is installed but failed to load" in out.stderr
