"""Tool groups: tools whose implementations load on demand (an MCP server, a module).

A group has an id (``mcp:github``), a display name, a one-line description, optional
server instructions, the tool descriptors known before loading (for the catalog and for
search), and an async loader that returns the real tools. The loader runs at most once
per group per runtime; a failed load can be retried. A skills group (``skills`` set: an
MCP server's skills, the local skills folders) holds one tool per skill, whose call loads
the skill (``greenroom.skills``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from greenroom.tools import Tool, ToolCallContext, ToolDescriptor

if TYPE_CHECKING:
    from greenroom.skills.tool import SkillSource

Loader = Callable[[], Awaitable[Sequence[Tool]]]


@attrs.define(eq=False)
class ToolGroup:
    """A group of tools behind one loader."""

    id: str
    name: str
    description: str
    loader: Loader
    known: list[ToolDescriptor] = attrs.field(factory=list)
    instructions: str | None = None
    defer: bool = True
    prefix: str | None = None
    """Every tool of the group is named ``prefix...`` (an MCP server's prefixed names), so
    a policy can hide the whole group before it is listed."""
    skills: SkillSource | None = None
    """Where the group's skills come from, for a skills group (each tool is a skill)."""
    _tools: list[Tool] | None = attrs.field(default=None, init=False)
    _lock: anyio.Lock | None = attrs.field(default=None, init=False)

    @property
    def loaded(self) -> bool:
        return self._tools is not None

    @property
    def tool_names(self) -> list[str]:
        if self._tools is not None:
            return [t.descriptor.name for t in self._tools]
        return [d.name for d in self.known]

    async def load(self) -> list[Tool]:
        """Run the loader once (concurrent callers wait for the same load)."""
        if self._tools is not None:
            return self._tools
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if self._tools is None:
                tools = list(await self.loader())
                self._tools = [t if t.descriptor.group == self.id else _Regrouped(t, self.id) for t in tools]
        return self._tools

    def relisted(self, known: Sequence[ToolDescriptor], tools: Sequence[Tool]) -> list[Tool] | None:
        """Its source listed again and its tools changed: ``known`` is what it declares
        now and, once loaded, ``tools`` are what it holds (returned as held); None when
        the group is not loaded (its next load brings them)."""
        self.known = list(known)
        if self._tools is None:
            return None
        self._tools = [t if t.descriptor.group == self.id else _Regrouped(t, self.id) for t in tools]
        return self._tools


class _Regrouped:
    """A loaded tool whose descriptor names its group (so search and listings agree)."""

    def __init__(self, inner: Tool, group: str) -> None:
        self._inner = inner
        self._descriptor = attrs.evolve(inner.descriptor, group=group)

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    @property
    def timeout(self) -> float | None:
        return self._inner.timeout

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        return await self._inner.execute(args, ctx)
