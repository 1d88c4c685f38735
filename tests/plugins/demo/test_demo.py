"""``greenroom demo``: the offline showcase runs, keeps the prefix stable, learns, forgets
with --fresh, and comes to the command line through the plugin's CLI hook."""

from __future__ import annotations

from pathlib import Path

import pytest
import typer
from rich.console import Console
from typer.testing import CliRunner

from greenroom import ConfigError, load_runtime_config
from greenroom.cli import add_plugin_commands
from greenroom_demo.run import AGENT_CONFIG, demo_home, run_demo

TASK_TOOLS = ["monitoring_list_active_alerts", "oncall_get_current", "pager_send_page", "slack_post_incident_note"]


@pytest.fixture(autouse=True)
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Each test starts with a demo that has learned nothing."""
    monkeypatch.setenv("GREENROOM_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def demo(strategy: str = "dispatch", fresh: bool = False) -> tuple[dict, str]:
    console = Console(record=True, width=140)
    result = run_demo(console, strategy=strategy, fresh=fresh)
    return result, console.export_text()


@pytest.mark.parametrize("strategy", ["dispatch", "inject"])
def test_demo_runs_offline_and_keeps_the_prefix_stable(strategy: str) -> None:
    result, text = demo(strategy, fresh=True)
    assert result["stop_reason"] == "final"
    assert result["calls"][:4] == TASK_TOOLS
    assert result["searches"] >= 1 and "search" in text
    assert result["sent"] < result["all_eager"] * 0.25
    if strategy == "dispatch":
        assert result["prefixes"] == 1 and "byte-identical" in text
    else:  # the follow-up leaves promoted tools idle, and retention re-defers them
        assert result["redeferred"] and "retention re-deferred idle tools" in text


def test_second_run_starts_the_learned_tools_eager_and_searches_none() -> None:
    first, text = demo()
    assert first["searches"] == 4 and first["learned"] == []
    assert "run the demo again" in text
    second, text = demo()
    assert second["searches"] == 0
    assert sorted(name for name, _ in second["learned"]) == sorted(TASK_TOOLS)
    assert second["calls"] == TASK_TOOLS and second["stop_reason"] == "final"
    assert "started eager from learned priors" in text
    assert second["sent"] < first["sent"]


def test_fresh_forgets_what_earlier_runs_learned() -> None:
    demo()
    assert (demo_home() / "priors.sqlite3").is_file()  # learned in the demo's own folder
    result, text = demo(fresh=True)
    assert "forgot what earlier demo runs learned" in text
    assert result["learned"] == [] and result["searches"] == 4


def test_each_run_is_wired_by_a_config_file_that_extends_the_packaged_agent() -> None:
    demo("inject", fresh=True)
    overlay = demo_home() / "demo.toml"
    cfg, _ = load_runtime_config(overlay)
    assert cfg.agent.id == "demo-oncall"
    assert [Path(f) for f in cfg.files] == [AGENT_CONFIG, overlay.resolve()]
    assert cfg.plugin_sections["deferred-tools"]["strategy"] == "inject"
    # the store URL is relative to the overlay, so what the demo learns stays in its folder
    assert cfg.dir_of("plugins.priors-persistence.store") == demo_home().resolve()


def test_an_unknown_strategy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="--strategy must be dispatch or inject, not 'eager'"):
        demo("eager")


@pytest.fixture
def cli() -> typer.Typer:
    root = typer.Typer()

    @root.callback()
    def main() -> None:
        """greenroom (test double)"""

    add_plugin_commands(root)  # every installed plugin, found by entry point
    return root


def test_the_command_comes_from_the_installed_plugin(cli: typer.Typer) -> None:
    runner = CliRunner()
    result = runner.invoke(cli, ["demo", "--fresh"], env={"COLUMNS": "160"})
    assert result.exit_code == 0, result.output
    assert "greenroom demo" in result.output and "searches: 4" in result.output
    bad = runner.invoke(cli, ["demo", "--strategy", "eager"])
    assert bad.exit_code == 2
    assert "--strategy must be dispatch or inject" in bad.output and "Traceback" not in bad.output
