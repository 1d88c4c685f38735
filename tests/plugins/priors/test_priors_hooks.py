"""The ``greenroom_profile_stores`` hook: declared by the priors plugin, not by core, and
implemented by a store plugin that imports nothing of priors, in a run and in the CLI."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.gr_testutil import env_with_path, pip_install

from greenroom import Plugin, hookimpl, hookspecs, make_plugin_host
from greenroom.plugins.discovery import AUTOLOAD_ENV
from greenroom_priors import PriorsPlugin
from greenroom_priors.stores import merge_factories

HERE = Path(__file__).resolve().parent


class NullStores(Plugin):
    name = "null-stores"

    @hookimpl
    def greenroom_profile_stores(self) -> dict[str, Any]:
        return {"null": lambda url: ("store", url)}


def test_hook_greenroom_profile_stores(monkeypatch: pytest.MonkeyPatch) -> None:
    # autoload off: no installed plugin is active, yet their own hooks are known, so a
    # store plugin works whether or not priors-persistence is enabled
    monkeypatch.setenv(AUTOLOAD_ENV, "1")
    host = make_plugin_host(extra=[NullStores()])
    (stores,) = host.call_sync("greenroom_profile_stores")
    assert stores["null"]("null://x") == ("store", "null://x")


def test_the_store_hook_belongs_to_the_priors_plugin() -> None:
    assert "greenroom_profile_stores" not in hookspecs.HOOK_NAMES
    assert PriorsPlugin.hookspecs is not None and hasattr(PriorsPlugin.hookspecs, "greenroom_profile_stores")
    host = make_plugin_host(records=[], extra=[PriorsPlugin(), NullStores()])
    assert host.pm.hook.greenroom_profile_stores.spec is not None
    # the plugin's own stores answer last, so a store plugin can replace a built-in scheme
    answers = host.call_sync("greenroom_profile_stores")
    assert "null" in answers[0] and "sqlite" in answers[-1]
    merged = merge_factories(answers)
    assert {"null", "sqlite", "postgresql", "memory"} <= set(merged)


@pytest.fixture(scope="module")
def store_plugin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixed-store distribution pip-installed into a folder of its own (never into
    the shared environment); a subprocess with it on PYTHONPATH sees it as installed."""
    return pip_install([HERE / "store_plugin"], tmp_path_factory.mktemp("fixed-store"))


def priors_cli(site: Path, home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "priors", *args],
        capture_output=True,
        text=True,
        env=env_with_path(site, GREENROOM_HOME=str(home), COLUMNS="200"),
        timeout=120,
    )


@pytest.mark.slow
def test_an_installed_store_plugin_serves_the_priors_cli(store_plugin: Path, tmp_path: Path) -> None:
    listed = priors_cli(store_plugin, tmp_path, "list", "--store", "fixed://shelf")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.split() == ["fixed-agent"]
    shown = priors_cli(store_plugin, tmp_path, "show", "fixed-agent", "--json", "--store", "fixed://shelf")
    assert shown.returncode == 0, shown.stderr
    assert '"store": "fixed://shelf"' in shown.stdout and '"tool": "lookup_order"' in shown.stdout
    # without the plugin the scheme is unknown, and the error says what is available
    missing = priors_cli(tmp_path / "empty", tmp_path, "list", "--store", "fixed://shelf")
    assert missing.returncode == 2
    assert "no profile store handles fixed:// URLs" in missing.stderr
