"""Plugin discovery through entry points, with real pip-installed distributions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from greenroom.plugins import AUTOLOAD_ENV, PluginHookError, discover, make_plugin_host
from greenroom.providers.scripted import ScriptedModel

pytestmark = [pytest.mark.slow, pytest.mark.usefixtures("installed_fixture_plugins")]


def greenroom_cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "greenroom.cli", *args],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "200", **(env or {})},
        timeout=120,
    )


def test_installed_plugin_is_discovered_with_its_distribution() -> None:
    records = {r.name: r for r in discover()}
    example = records["example"]
    assert example.cls is not None and example.distribution == "greenroom-example-plugin"
    assert example.version == "1.2.3"
    assert "greenroom_before_inference" in example.hooks()
    # first-party plugins come through the very same entry-point group
    assert records["scripted"].distribution == "greenroom"


def test_import_error_names_distribution_and_entry_point() -> None:
    broken = {r.name: r for r in discover()}["broken-import"]
    assert broken.cls is None
    assert broken.error is not None
    assert "distribution greenroom-broken-plugin" in broken.error
    assert "broken-import = greenroom_broken.missing:Plugin" in broken.error
    assert "greenroom_module_that_does_not_exist" in broken.error


def test_plugins_command_lists_everything_even_with_a_broken_plugin() -> None:
    out = greenroom_cli("plugins", "--json")
    assert out.returncode == 0, out.stderr
    rows = {r["name"]: r for r in json.loads(out.stdout)}
    assert rows["example"]["status"] == "opt-in" and rows["example"]["version"] == "1.2.3"
    assert rows["scripted"]["status"] == "enabled"
    assert rows["broken-import"]["status"] == "error"
    assert rows["broken-hook"]["status"] == "opt-in"
    assert greenroom_cli("--help").returncode == 0


def test_config_section_of_an_installed_plugin_is_validated(tmp_path: Path) -> None:
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


@pytest.mark.anyio
async def test_installed_plugin_hooks_fire_in_phase_order(tmp_path: Path) -> None:
    import greenroom_example

    from greenroom.compose import build_runtime

    cfg = tmp_path / "a.toml"
    cfg.write_text('[plugins]\nenable = ["example"]\n[plugins.example]\nnote = "hello from config"\n')
    greenroom_example.EVENTS.clear()
    rt = build_runtime(cfg, model=ScriptedModel([{"text": "hi"}]))
    await rt.session().run("x")
    assert greenroom_example.EVENTS == ["run_start", "before_inference", "after_inference", "run_end"]
    assert "hello from config (level 1)" in rt.model.requests[0].system_text


@pytest.mark.anyio
async def test_a_hook_that_raises_is_reported_by_plugin_distribution_and_hook(tmp_path: Path) -> None:
    from greenroom.compose import build_runtime

    cfg = tmp_path / "a.toml"
    cfg.write_text('[plugins]\nenable = ["broken-hook"]\n')
    rt = build_runtime(cfg, model=ScriptedModel([{"text": "hi"}]))
    with pytest.raises(PluginHookError) as info:
        await rt.session().run("x")
    msg = str(info.value)
    assert "plugin 'broken-hook'" in msg and "greenroom-broken-plugin 0.0.1" in msg
    assert "greenroom_before_inference" in msg and "deliberate failure" in msg


def test_disable_and_autoload_switch(monkeypatch: pytest.MonkeyPatch) -> None:
    assert make_plugin_host().plugin("example") is None  # opt-in
    host = make_plugin_host(enable=["example"], disable=["scripted"])
    assert host.plugin("example") is not None and host.plugin("scripted") is None
    monkeypatch.setenv(AUTOLOAD_ENV, "1")
    host = make_plugin_host()
    assert host.plugin("example") is None and host.plugin("scripted") is None
    host = make_plugin_host(enable=["example"])
    assert host.plugin("example") is not None
