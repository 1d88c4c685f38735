"""Fixtures for the skills tests: a state folder per test (its listing and file caches
are its own), and folders of skills to serve or to read."""

from __future__ import annotations

from pathlib import Path

import pytest
from support.skills import two_skills


@pytest.fixture(autouse=True)
def gr_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "gr-home"
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    return home


@pytest.fixture
def skills_folder(tmp_path: Path) -> Path:
    """Two skills, one with a file in a sub-folder: what the test server serves."""
    return two_skills(tmp_path / "served")
