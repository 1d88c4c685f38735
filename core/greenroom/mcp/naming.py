"""Model-facing names for MCP tools: provider-safe, unique across servers and within a
listing (a name a server lists twice gets a suffix), stable once given."""

from __future__ import annotations

import hashlib
import logging
import re
from collections.abc import Iterable
from typing import Literal

log = logging.getLogger(__name__)

# Tool names must satisfy the strictest provider rule (OpenAI, Anthropic: [A-Za-z0-9_-],
# OpenAI: at most 64 characters).
_UNSAFE_NAME_CHARS = re.compile(r"[^A-Za-z0-9_-]")
_SAFE_NAME = re.compile(r"[A-Za-z0-9_-]+")
_MAX_NAME = 64
MAX_PREFIX = _MAX_NAME - 9
"""How much of a name survives ``_fit`` unchanged."""


def safe_name(text: str) -> str:
    """``text`` with every character a provider would reject replaced by ``_``."""
    if _SAFE_NAME.fullmatch(text):  # most names: no new string
        return text
    return _UNSAFE_NAME_CHARS.sub("_", text) or "_"


def prefixed_name(server: str, tool: str) -> str:
    return f"{safe_name(server)}__{safe_name(tool)}"


def _fit(name: str) -> str:
    """``name`` cut to the provider limit, with a hash of the whole name so that two long
    names sharing a beginning stay distinct."""
    if len(name) <= _MAX_NAME:
        return name
    digest = hashlib.sha256(name.encode()).hexdigest()[:8]
    return f"{name[: _MAX_NAME - 9]}_{digest}"


class ToolNamer:
    """Assigns model-facing names to MCP tools across servers.

    ``prefixed`` servers give ``<server>__<tool>``. ``bare`` servers give the tool's own
    name when no other tool (another server's, or a reserved name such as a Python tool)
    has it; a colliding tool falls back to its prefixed name, with a warning. A name a
    server lists more than once keeps every copy callable: the second is ``<name>_2``, the
    third ``<name>_3`` (in listing order), with a warning. Names are assigned once per
    (server, tool, occurrence) and kept, so a re-listing never renames a tool.
    """

    def __init__(self, reserved: Iterable[str] = ()) -> None:
        self._owner: dict[str, tuple[str, str, int] | None] = {n: None for n in reserved}
        self._assigned: dict[tuple[str, str, int], str] = {}
        self._prefixes: dict[str, str] = {}  # a server's part of its prefixed names, made once

    def name(self, server: str, tool: str, naming: Literal["prefixed", "bare"], occurrence: int = 1) -> str:
        """The name of the ``occurrence``-th tool called ``tool`` in ``server``'s listing."""
        key = (server, tool, occurrence)
        got = self._assigned.get(key)
        if got is not None:
            return got
        if occurrence > 1:
            name = _fit(f"{self.name(server, tool, naming)}_{occurrence}")
            log.warning("MCP server %r lists the tool %r more than once; copy %d is %r", server, tool, occurrence, name)
        else:
            name = self._first_name(server, tool, naming)
        if name in self._owner and self._owner[name] != key:
            # Two tools of one server that differ only in unsafe characters: keep both callable.
            i = 2
            while _fit(f"{name}_{i}") in self._owner:
                i += 1
            name = _fit(f"{name}_{i}")
        self._owner[name] = key
        self._assigned[key] = name
        return name

    def _first_name(self, server: str, tool: str, naming: Literal["prefixed", "bare"]) -> str:
        prefix = self._prefixes.get(server)
        if prefix is None:
            prefix = self._prefixes[server] = f"{safe_name(server)}__"
        name = _fit(prefix + safe_name(tool))
        if naming == "bare":
            bare = _fit(safe_name(tool))
            if bare in self._owner:
                owner = self._owner[bare]
                who = f"MCP server {owner[0]!r}" if owner else "another tool"
                log.warning("MCP tool %r of server %r is named %r (%s has the bare name)", tool, server, name, who)
            else:
                name = bare
        return name


__all__ = ["ToolNamer", "prefixed_name", "safe_name"]
