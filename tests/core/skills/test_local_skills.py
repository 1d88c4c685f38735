"""Skills from ``[skills] folders`` in a run: listed by name and description, loaded by a
call whose result is the SKILL.md; a folder that is not a skill is left out with a
warning naming its file; a file changed since it was listed is refused, naming it; a
folder that does not exist is a config error naming the key and the file, every one at once."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from support.skills import write_skill

from greenroom.compose.build import build_runtime
from greenroom.config import ConfigErrors

pytestmark = pytest.mark.anyio

NOTES = "skill_release-notes"


def agent(folder: Path, turns: list[dict[str, Any]], folders: str = '["skills"]') -> Path:
    (folder / "script.jsonl").write_text("\n".join(json.dumps(t) for t in [*turns, {"text": "done"}]) + "\n")
    path = folder / "agent.toml"
    path.write_text(
        f'[agent]\nmodel = "scripted:script.jsonl"\nmax_steps = 8\n[skills]\nfolders = {folders}\n'
        "[plugins.deferred-tools]\nenabled = true\n"
    )
    return path


def dispatch(tool: str, /, **arguments: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": tool, "arguments": arguments}}]}


async def run(path: Path) -> tuple[Any, list[Any]]:
    rt = build_runtime(path)
    try:
        session = rt.session()
        await session.run("go")
        return rt, [m for m in session.messages if m.role == "tool"]
    finally:
        await rt.aclose()


async def test_local_skills_are_listed_and_loaded_and_bad_ones_named(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "release-notes", "Write release notes from merged changes", "List user-visible changes.\n")
    (skills / "no-front").mkdir()
    (skills / "no-front" / "SKILL.md").write_text("# Just a heading\n")
    write_skill(skills, "misnamed", "A skill in the wrong folder")
    (skills / "misnamed").rename(skills / "other-folder")
    with caplog.at_level(logging.WARNING, logger="greenroom"):
        rt, (loaded,) = await run(agent(tmp_path, [dispatch(NOTES)]))
    listing = "\n".join(s.text for s in rt.model.requests[0].system)
    assert f"{NOTES} - Write release notes from merged changes" in listing
    assert "(1 skills)" in listing and "other-folder" not in listing and "no-front" not in listing
    assert not loaded.is_error and loaded.content.endswith("---\nList user-visible changes.\n")
    assert "the local skills folder" in loaded.content
    assert f"{skills / 'no-front' / 'SKILL.md'} is not a skill: it does not begin with YAML front matter" in caplog.text
    assert f"{skills / 'other-folder' / 'SKILL.md'} is not a skill: its front matter needs name: other-folder" in (
        caplog.text
    )


async def test_a_local_file_changed_since_it_was_listed_is_refused(tmp_path: Path) -> None:
    skill = write_skill(tmp_path / "skills", "release-notes", "Write release notes", "Old text.\n")
    rt = build_runtime(agent(tmp_path, []))
    try:
        (skill / "SKILL.md").write_text("---\nname: release-notes\ndescription: Write release notes\n---\nNew.\n")
        (tool,) = await rt.groups["skills"].load()
        result = await tool.execute({}, None)  # type: ignore[arg-type]
    finally:
        await rt.aclose()
    assert result.is_error and "skill://release-notes/SKILL.md from the local skills folder is not what" in (
        result.content
    )
    assert "New." not in result.content


def test_skills_folders_that_do_not_exist_are_config_errors(tmp_path: Path) -> None:
    (tmp_path / "skills").mkdir()
    with pytest.raises(ConfigErrors) as caught:
        build_runtime(agent(tmp_path, [], folders='["nowhere", "skills", "elsewhere"]'))
    said = str(caught.value)
    assert f"agent.toml: skills.folders[0]: {tmp_path / 'nowhere'} is not a folder of skills" in said
    assert f"skills.folders[2]: {tmp_path / 'elsewhere'}" in said and "folders[1]" not in said


def test_config_check_warns_of_each_folder_that_is_not_a_skill(tmp_path: Path) -> None:
    skills = tmp_path / "skills"
    write_skill(skills, "release-notes", "Write release notes")
    (skills / "no-front").mkdir()
    (skills / "no-front" / "SKILL.md").write_text("# Just a heading\n")
    path = agent(tmp_path, [])
    done = subprocess.run(
        [sys.executable, "-m", "greenroom.cli", "config", "check", str(path)],
        capture_output=True,
        text=True,
        env={**os.environ, "COLUMNS": "1000"},  # no line wrapped
    )
    said = done.stdout + done.stderr
    assert done.returncode == 0, said
    assert f"warning: {path}: skills.folders: {skills / 'no-front' / 'SKILL.md'} is not a skill" in said
