"""``greenroom demo`` from a plain, non-editable install: the demo agent's files ship in the
package, and a second run starts the learned tools eager."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from support.gr_testutil import PIP_INSTALL, ROOT


@pytest.mark.slow
def test_the_demo_runs_from_a_plain_install(tmp_path: Path) -> None:
    # build from a copy, so the checkout gets no build/ or egg-info of this test's making
    src = tmp_path / "src"
    skip = shutil.ignore_patterns("__pycache__", "*.egg-info")
    for folder in ("core", "plugins"):
        shutil.copytree(ROOT / folder, src / folder, ignore=skip)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(ROOT / name, src / name)
    site = tmp_path / "site"
    subprocess.run([*PIP_INSTALL, "--target", str(site), str(src)], check=True, capture_output=True)
    shutil.rmtree(src)  # the demo must not need the sources
    home = tmp_path / "home"
    # PYTHONPATH comes before the checkout's editable install, so the installed copy runs
    env = {**os.environ, "PYTHONPATH": str(site), "GREENROOM_HOME": str(home), "COLUMNS": "160"}
    command = [sys.executable, "-m", "greenroom.cli", "demo"]
    first = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 0, first.stdout + first.stderr
    assert "searches: 4" in first.stdout
    second = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "searches: 0" in second.stdout and "started eager from learned priors" in second.stdout
    overlay = (home / "demo" / "demo.toml").read_text(encoding="utf-8")
    assert str(site / "greenroom_demo" / "agent" / "demo.toml") in overlay
