"""Skills from folders on disk (``[skills] folders``): each sub-folder holding a
``SKILL.md`` is a skill, in the Agent Skills layout SEP-2640 serves.

A skill's ``SKILL.md`` must begin with YAML front matter whose ``name`` is the folder's
name and which has a ``description``; every other file in the folder (hidden ones left
out) is one of its files. The folders are read once, when the runtime is built: each
skill becomes an entry whose files carry their sha256 digests (``skill://NAME/PATH``),
and a file that changed on disk since is refused when read, as a server's would be.
What cannot be a skill is left out with a warning that names the file and why; a skill
over the limits (512 files, 16 MiB) is listed and refused when loaded.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from greenroom.mcp.naming import ToolNamer
from greenroom.skills.entry import (
    MAX_SKILL_BYTES,
    MAX_SKILL_FILES,
    MAX_SKILLS,
    SKILL_FILE,
    SkillEntry,
    SkillError,
    SkillFile,
    front_matter,
    sha256_digest,
)
from greenroom.skills.tool import SkillTool, checked

LOCAL_GROUP = "skills"
"""The group id of the local skills."""


class FolderSkills:
    """The skills of the local folders (a ``SkillSource``)."""

    label = "local"
    origin = "the local skills folder"

    def __init__(self, folders: Sequence[Path], reserved: Sequence[str] = ()) -> None:
        self._paths: dict[str, Path] = {}
        self.problems: list[str] = []
        """What was left out and why, a sentence each: warnings of the run, or of ``config check``."""
        entries: list[SkillEntry] = []
        for folder in folders:
            try:
                found = sorted(p for p in folder.iterdir() if (p / SKILL_FILE).is_file())
            except OSError as exc:
                self._warn(f"the skills folder {folder} cannot be read: {exc}")
                continue
            for skill in found:
                if len(entries) >= MAX_SKILLS:
                    self._warn(f"more than {MAX_SKILLS} local skills: {skill} and the rest are left out")
                    break
                entry = self._read(skill, {e.uri for e in entries})
                if entry is not None:
                    entries.append(entry)
        namer = ToolNamer(reserved)
        seen: dict[str, int] = {}
        self._tools = []
        for entry in entries:
            seen[entry.name] = seen.get(entry.name, 0) + 1
            name = namer.name(self.label, f"skill:{entry.name}", "bare", seen[entry.name])
            self._tools.append(SkillTool(self, entry, name, LOCAL_GROUP))

    def _read(self, folder: Path, taken: set[str]) -> SkillEntry | None:
        """The skill in ``folder``, or None (with a warning saying why it is not one)."""
        where = folder / SKILL_FILE
        try:
            if where.stat().st_size > MAX_SKILL_BYTES:
                raise ValueError(f"it is over {MAX_SKILL_BYTES:,} bytes")
            meta = front_matter(where.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, ValueError) as exc:
            self._warn(f"{where} is not a skill: {exc}")
            return None
        if meta.get("name") != folder.name or not isinstance(meta.get("description"), str):
            self._warn(f"{where} is not a skill: its front matter needs name: {folder.name} and a description")
            return None
        uri = f"skill://{folder.name}/{SKILL_FILE}"
        if uri in taken:
            self._warn(f"{where} is left out: a skill named {folder.name!r} was found before it")
            return None
        try:
            return self._files(folder, uri, meta)
        except OSError as exc:
            self._warn(f"the skill {folder} is left out: {exc}")
            return None

    def _files(self, folder: Path, uri: str, meta: dict[str, Any]) -> SkillEntry:
        """The entry of the skill in ``folder``: every file with its digest, or a refusal
        when there are more or larger files than a skill may have."""
        walk = (p for p in folder.rglob("*") if p.is_file() and not _hidden(p.relative_to(folder)))
        paths = sorted(itertools.islice(walk, MAX_SKILL_FILES + 1))
        sizes = [p.stat().st_size for p in paths]
        if len(paths) > MAX_SKILL_FILES or sum(sizes) > MAX_SKILL_BYTES:
            many = len(paths) > MAX_SKILL_FILES
            why = f"it has over {MAX_SKILL_FILES} files" if many else f"its files hold {sum(sizes):,} bytes"
            why += f", over the limits of a skill ({MAX_SKILL_FILES} files, {MAX_SKILL_BYTES:,} bytes)"
            return SkillEntry(uri, meta, (), why)
        files = []
        for path in paths:
            data = path.read_bytes()
            file = SkillFile(
                f"skill://{folder.name}/{path.relative_to(folder).as_posix()}", sha256_digest(data), len(data)
            )
            self._paths[file.uri] = path
            files.append(file)
        return SkillEntry(uri, meta, tuple(files))

    def _warn(self, message: str) -> None:
        self.problems.append(message)

    def tools(self) -> Sequence[SkillTool]:
        return self._tools

    async def refresh(self) -> Sequence[SkillTool]:
        return self._tools

    async def current(self, entry: SkillEntry) -> SkillEntry:
        return entry

    async def fetch(self, entry: SkillEntry, file: SkillFile) -> bytes:
        path = self._paths.get(file.uri)
        try:
            data = path.read_bytes() if path is not None else None
        except OSError as exc:
            raise SkillError(f"{file.uri} of the local skills cannot be read: {exc}") from None
        if data is None:
            raise SkillError(f"{file.uri} is not a file of the local skills")
        return checked(self.origin, file, data)


def _hidden(relative: Path) -> bool:
    return any(part.startswith(".") for part in relative.parts)


__all__ = ["LOCAL_GROUP", "FolderSkills"]
