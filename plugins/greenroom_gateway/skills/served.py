"""What a skill looks like as the gateway serves it (SEP-2640): the gateway's own URIs
for a source's skill, the entry it offers, a file's content as ``resources/read`` gives
it, and the params of the extension's requests."""

from __future__ import annotations

import base64
import mimetypes
from collections.abc import Iterable, Mapping
from typing import Any

import attrs
import mcp_types

from greenroom.kit import SkillEntry, SkillFile, SkillTool

SCHEME = "skill://"


class GetSkillParams(mcp_types.RequestParams):
    """``skills/get``: the URI of the skill's ``SKILL.md``."""

    uri: str


class DirectoryParams(mcp_types.PaginatedRequestParams):
    """``resources/directory/read``: the directory's URI."""

    uri: str


@attrs.frozen
class Served:
    """One skill as the gateway offers it: its tool, the entry it is offered by, its own
    ``SKILL.md`` URI, and each of its files by the gateway's URI."""

    tool: SkillTool
    entry: SkillEntry
    uri: str
    files: Mapping[str, SkillFile]

    def to_json(self) -> dict[str, Any]:
        resources = [{"uri": uri, "digest": f.digest, "size": f.size} for uri, f in self.files.items()]
        return {"uri": self.uri, "frontmatter": dict(self.entry.frontmatter), "resources": resources}

    @property
    def root(self) -> str:
        return self.uri.rsplit("/", 1)[0]


def offered_uri(label: str, uri: str) -> str:
    """The gateway's URI of a source's ``uri``: ``skill://LABEL/`` then its path (after
    its scheme, for a scheme other than ``skill``)."""
    scheme, _, rest = uri.partition("://")
    return f"{SCHEME}{label}/{rest}" if scheme == "skill" else f"{SCHEME}{label}/{scheme}/{rest}"


def unique_labels(names: Iterable[str]) -> list[str]:
    """Each source's label, made unique (a server named like the local folders' label)."""
    out: list[str] = []
    for name in names:
        label, n = name, 2
        while label in out:
            label, n = f"{name}-{n}", n + 1
        out.append(label)
    return out


def mime(uri: str) -> str:
    if uri.endswith(".md"):
        return "text/markdown"
    return mimetypes.guess_type(uri)[0] or "application/octet-stream"


def contents(uri: str, data: bytes) -> mcp_types.TextResourceContents | mcp_types.BlobResourceContents:
    """Text when the bytes are UTF-8 (their UTF-8 is then those very bytes), else a blob."""
    try:
        return mcp_types.TextResourceContents(uri=uri, mime_type=mime(uri), text=data.decode("utf-8"))
    except UnicodeDecodeError:
        return mcp_types.BlobResourceContents(uri=uri, mime_type=mime(uri), blob=base64.b64encode(data).decode())


__all__ = ["SCHEME", "DirectoryParams", "GetSkillParams", "Served", "contents", "mime", "offered_uri", "unique_labels"]
