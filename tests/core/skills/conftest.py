"""Fixtures for the skills tests: a state folder per test (its listing and file caches
are its own), and folders of skills to serve or to read."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def gr_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "gr-home"
    monkeypatch.setenv("GREENROOM_HOME", str(home))
    return home


def write_skill(folder: Path, name: str, description: str, body: str = "", **files: str) -> Path:
    """A skill folder ``folder/name`` with its SKILL.md and ``files`` (path -> text)."""
    skill = folder / name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}", encoding="utf-8")
    for path, text in files.items():
        target = skill / path.replace("__", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return skill


@pytest.fixture
def skills_folder(tmp_path: Path) -> Path:
    """Two skills, one with a file in a sub-folder: what the test server serves."""
    folder = tmp_path / "served"
    write_skill(
        folder,
        "pdf-processing",
        "Extract, fill, and assemble PDF documents",
        "# PDF processing\n\nRead references/FORMS.md before filling a form.\n",
        **{"references__FORMS.md": "Forms are filled field by field.\n"},
    )
    write_skill(folder, "git-workflow", "Follow this team's Git conventions for branching and commits", "Branch.\n")
    return folder
