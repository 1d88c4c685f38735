"""Skills (the MCP Skills extension, SEP-2640): instructions an agent loads when a task
needs them, from MCP servers and from folders on disk.

One job per module: ``entry`` (a skill's entry: its ``SKILL.md`` URI, front matter and
files with their digests, as the extension's wire carries it), ``files`` (files kept on
disk by digest), ``tool`` (a skill as a tool of a skills group, whose call loads it),
``folder`` (the local ``[skills] folders``), ``mcp`` (an MCP server's skills, listed and
read through the SDK, cached beside its tools listing). ``greenroom serve`` offers them
all to its clients.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from greenroom._support.lazy import lazy_exports

if TYPE_CHECKING:
    from greenroom.skills.entry import SKILLS_EXTENSION as SKILLS_EXTENSION
    from greenroom.skills.entry import SkillEntry as SkillEntry
    from greenroom.skills.entry import SkillError as SkillError
    from greenroom.skills.entry import SkillFile as SkillFile
    from greenroom.skills.entry import sha256_digest as sha256_digest
    from greenroom.skills.folder import FolderSkills as FolderSkills
    from greenroom.skills.mcp import McpSkills as McpSkills
    from greenroom.skills.tool import SkillSource as SkillSource
    from greenroom.skills.tool import SkillTool as SkillTool
    from greenroom.skills.tool import skill_group as skill_group

_EXPORTS: dict[str, str] = {
    "SKILLS_EXTENSION": "greenroom.skills.entry",
    "SkillEntry": "greenroom.skills.entry",
    "SkillError": "greenroom.skills.entry",
    "SkillFile": "greenroom.skills.entry",
    "sha256_digest": "greenroom.skills.entry",
    "FolderSkills": "greenroom.skills.folder",
    "McpSkills": "greenroom.skills.mcp",
    "SkillSource": "greenroom.skills.tool",
    "SkillTool": "greenroom.skills.tool",
    "skill_group": "greenroom.skills.tool",
}

__all__ = sorted(_EXPORTS)

__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
