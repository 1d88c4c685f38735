"""Skills for the tests: folders in the SKILL.md layout, and the real SDK server that
serves them (``skills_server.py``), for the core tests and the gateway's alike."""

from __future__ import annotations

import json
import sys
from pathlib import Path

SKILLS_SERVER = Path(__file__).with_name("skills_server.py")


def write_skill(folder: Path, name: str, description: str, body: str = "", **files: str) -> Path:
    """A skill folder ``folder/name`` with its SKILL.md and ``files`` (path -> text, ``__``
    for ``/``)."""
    skill = folder / name
    skill.mkdir(parents=True)
    (skill / "SKILL.md").write_text(f"---\nname: {name}\ndescription: {description}\n---\n{body}", encoding="utf-8")
    for path, text in files.items():
        target = skill / path.replace("__", "/")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    return skill


def two_skills(folder: Path) -> Path:
    """Two skills, one with a file in a sub-folder."""
    write_skill(
        folder,
        "pdf-processing",
        "Extract, fill, and assemble PDF documents",
        "# PDF processing\n\nRead references/FORMS.md before filling a form.\n",
        **{"references__FORMS.md": "Forms are filled field by field.\n"},
    )
    write_skill(folder, "git-workflow", "Follow this team's Git conventions for branching and commits", "Branch.\n")
    return folder


def skills_server_toml(name: str, served: Path, log: Path, env: str = "") -> str:
    """A ``[[tools.mcp]]`` entry for skills_server.py serving ``served``; it notes each
    request in ``log``; ``env`` adds ``, KEY = "value"`` pairs to its environment."""
    return (
        f'[[tools.mcp]]\nname = "{name}"\ncommand = {json.dumps(sys.executable)}\n'
        f"args = [{json.dumps(str(SKILLS_SERVER))}, {json.dumps(str(served))}]\n"
        f"env = {{ SKILLS_LOG = {json.dumps(str(log))} {env} }}\n"
    )
