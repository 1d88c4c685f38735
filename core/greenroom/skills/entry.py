"""A skill as the MCP Skills extension (SEP-2640) describes it: its ``SKILL.md`` URI, its
front matter, and every file with the sha256 digest and size of its bytes.

The wire shape is the ``Skill`` entry of the extension's specification
(modelcontextprotocol/ext-skills, ``specification/stable/skills.mdx``): ``{"uri",
"frontmatter": {"name", "description", ...}, "resources": [{"uri", "digest", "size"}] |
"dynamic"}``. ``SkillEntry.from_json`` checks an entry as the specification requires
(a ``SKILL.md`` URI whose last path segment is the skill's name, ``sha256:`` digests,
files within the skill's folder, ``SKILL.md`` among them) and says in a sentence what is
wrong. An entry over the limits every host must support (512 files, 16 MiB in all) or
whose content is generated (``"dynamic"``, nothing to check it against) is kept, with
``refusal`` saying why it is not loaded.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from typing import Any

import attrs

SKILLS_EXTENSION = "io.modelcontextprotocol/skills"
"""The extension's identifier, under ``capabilities.extensions``."""
SKILL_FILE = "SKILL.md"
MAX_SKILL_FILES = 512
"""Files one skill may have (SEP-2640's limit: every host supports up to it)."""
MAX_SKILL_BYTES = 16 * 1024 * 1024
"""Bytes all of one skill's files may hold (SEP-2640's limit)."""
MAX_SKILLS = 1000
"""Skills taken from one source (an MCP server, the local folders); more are left out."""

_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
_FRONT = re.compile(r"\A---[ \t]*\r?\n(.*?)^---[ \t]*$", re.DOTALL | re.MULTILINE)


class SkillError(Exception):
    """A skill that cannot be loaded or read, in a sentence for the model and the user."""


def sha256_digest(data: bytes) -> str:
    """``sha256:<hex>``, the form of a skill file's digest."""
    return "sha256:" + hashlib.sha256(data).hexdigest()


def front_matter(text: str) -> dict[str, Any]:
    """The YAML front matter of a ``SKILL.md`` as JSON values (a date becomes its text);
    ``ValueError`` when there is none or it is not a YAML mapping."""
    import yaml

    found = _FRONT.match(text.lstrip("\ufeff"))
    if found is None:
        raise ValueError("it does not begin with YAML front matter between '---' lines")
    try:
        data = yaml.safe_load(found.group(1))
    except yaml.YAMLError as exc:
        raise ValueError(f"its front matter is not valid YAML ({str(exc).splitlines()[0]})") from None
    if not isinstance(data, dict):
        raise ValueError("its front matter is not a YAML mapping")
    return as_json(data)


def as_json(value: Any) -> Any:
    """``value`` as JSON would carry it (what front matter is compared as)."""
    return json.loads(json.dumps(value, default=str))


@attrs.frozen
class SkillFile:
    """One file of a skill: its URI, and the digest and size of its bytes."""

    uri: str
    digest: str
    size: int

    def to_json(self) -> dict[str, Any]:
        return {"uri": self.uri, "digest": self.digest, "size": self.size}

    def check(self, data: bytes) -> str | None:
        """Why ``data`` is not this file's content (size, then digest), or None."""
        if len(data) != self.size:
            return f"{len(data)} bytes where its entry says {self.size}"
        if sha256_digest(data) != self.digest:
            return "its sha256 digest is not the one its entry gives"
        return None


@attrs.frozen
class SkillEntry:
    """One skill: ``uri`` is its ``SKILL.md``'s; ``files`` is None for a ``"dynamic"`` one."""

    uri: str
    frontmatter: Mapping[str, Any]
    files: tuple[SkillFile, ...] | None
    refusal: str | None = None
    """Why the skill is not loaded (too large, or ``"dynamic"``); None when it can be."""

    @property
    def name(self) -> str:
        return str(self.frontmatter["name"])

    @property
    def description(self) -> str:
        return str(self.frontmatter["description"])

    @property
    def root(self) -> str:
        """The skill's folder: its ``SKILL.md`` URI without ``/SKILL.md``."""
        return self.uri[: -len(SKILL_FILE) - 1]

    def path_of(self, file: SkillFile) -> str:
        """A file's path within the skill (``references/FORMS.md``)."""
        return file.uri[len(self.root) + 1 :]

    def file(self, path: str) -> SkillFile | None:
        """The file at ``path`` within the skill (or its full URI), if the entry lists it."""
        uri = path if path.startswith(self.root + "/") else f"{self.root}/{path.lstrip('/')}"
        return next((f for f in self.files or () if f.uri == uri), None)

    def to_json(self) -> dict[str, Any]:
        resources: Any = "dynamic" if self.files is None else [f.to_json() for f in self.files]
        return {"uri": self.uri, "frontmatter": dict(self.frontmatter), "resources": resources}

    @classmethod
    def from_json(cls, data: Any) -> SkillEntry:
        """An entry as a server sent it; ``ValueError`` says what is wrong with it."""
        if not isinstance(data, Mapping):
            raise ValueError("an entry is not a JSON object")
        uri, fm = data.get("uri"), data.get("frontmatter")
        if not isinstance(uri, str) or not uri.endswith("/" + SKILL_FILE):
            raise ValueError(f"its uri {uri!r} is not the URI of a {SKILL_FILE}")
        if not isinstance(fm, Mapping) or not isinstance(fm.get("name"), str) or not fm["name"]:
            raise ValueError(f"{uri}: its frontmatter has no name")
        if not isinstance(fm.get("description"), str):
            raise ValueError(f"{uri}: its frontmatter has no description")
        root = uri[: -len(SKILL_FILE) - 1]
        if root.rsplit("/", 1)[-1] != fm["name"]:
            raise ValueError(f"{uri}: the last segment of its path is not its name {fm['name']!r}")
        resources = data.get("resources")
        if resources == "dynamic":
            why = "its content is generated by the server (resources: dynamic), so it cannot be checked"
            return cls(uri, as_json(fm), None, f"{why}; greenroom does not load such skills")
        if not isinstance(resources, list):
            raise ValueError(f"{uri}: its resources are neither a list nor 'dynamic'")
        if len(resources) > MAX_SKILL_FILES:
            why = f"it has {len(resources)} files, over the limit of {MAX_SKILL_FILES} a skill may have"
            return cls(uri, as_json(fm), (), why)
        files = tuple(_file(root, r) for r in resources)
        uris = [f.uri for f in files]
        if uri not in uris:
            raise ValueError(f"{uri}: its resources do not list its {SKILL_FILE}")
        if len(set(uris)) != len(uris):
            raise ValueError(f"{uri}: its resources list a file twice")
        total = sum(f.size for f in files)
        if total > MAX_SKILL_BYTES:
            why = f"its files hold {total:,} bytes, over the limit of {MAX_SKILL_BYTES:,} (16 MiB) a skill may hold"
            return cls(uri, as_json(fm), (), why)
        return cls(uri, as_json(fm), files)


def _file(root: str, data: Any) -> SkillFile:
    if not isinstance(data, Mapping):
        raise ValueError(f"{root}: a resource is not a JSON object")
    uri, digest, size = data.get("uri"), data.get("digest"), data.get("size")
    if not isinstance(uri, str) or not uri.startswith(root + "/") or "/../" in uri + "/":
        raise ValueError(f"{root}: the resource {uri!r} is not a file within the skill")
    if not isinstance(digest, str) or not _DIGEST.fullmatch(digest):
        raise ValueError(f"{uri}: its digest is not sha256: and 64 lowercase hex digits")
    if type(size) is not int or size < 0:
        raise ValueError(f"{uri}: its size is not a whole number of bytes")
    return SkillFile(uri, digest, size)


__all__ = [
    "MAX_SKILLS",
    "MAX_SKILL_BYTES",
    "MAX_SKILL_FILES",
    "SKILLS_EXTENSION",
    "SKILL_FILE",
    "SkillEntry",
    "SkillError",
    "SkillFile",
    "as_json",
    "front_matter",
    "sha256_digest",
]
