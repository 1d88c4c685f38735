"""Real, pip-installed plugin distributions: the example plugin and one broken distribution
per failure kind (tests/fixtures/broken_plugins), installed once per test session into a
folder of their own, never into the shared environment.

A subprocess sees them with that folder on PYTHONPATH (``greenroom_cli``); a test in this
process puts it on ``sys.path`` for its own duration (``on_path``).
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from support.gr_testutil import EXAMPLES, FIXTURES, env_with_path, pip_install

DISTRIBUTIONS = [
    EXAMPLES / "example_plugin",
    FIXTURES / "broken_plugin",
    *sorted(p for p in (FIXTURES / "broken_plugins").iterdir() if (p / "pyproject.toml").exists()),
]

CLI = Callable[..., subprocess.CompletedProcess[str]]


@pytest.fixture(scope="session")
def plugin_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return pip_install(DISTRIBUTIONS, tmp_path_factory.mktemp("plugin-site"))


@pytest.fixture
def on_path(plugin_site: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The installed distributions, visible to discovery in this process for one test."""
    monkeypatch.syspath_prepend(str(plugin_site))
    return plugin_site


@pytest.fixture
def greenroom_cli(plugin_site: Path) -> CLI:
    """Run ``python -m greenroom.cli ARGS`` in a process that sees the installed plugins."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "greenroom.cli", *args],
            capture_output=True,
            text=True,
            cwd=cwd,
            env=env_with_path(plugin_site, **{"COLUMNS": "200", **(env or {})}),
            timeout=120,
        )

    return run
