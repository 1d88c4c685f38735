"""Fixtures for the read-result plugin: a state folder of each test's own, so the kept
results of one test are never another's."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def gr_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "gr-home"
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    return home
