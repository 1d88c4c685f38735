"""What one run's plugins see of the tools: the tool set and the groups with every
hidden tool left out (``RunContext.tools``, ``RunContext.groups``).

Plugins never get the unscoped objects during a run, so a plugin that forgets to check
``ctx.hidden`` still cannot list, search, load or call a hidden tool.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import Protocol, overload

import attrs

from greenroom.tools import Tool, ToolDescriptor
from greenroom.tools.groups import ToolGroup
from greenroom.tools.schema.problem import SchemaProblem
from greenroom.tools.toolset import ToolSet


class ScopedTools(Mapping[str, Tool]):
    """The loaded tools an agent may use in a run (a read-only view of its ``ToolSet``)."""

    def __init__(self, tools: ToolSet, hidden: frozenset[str]) -> None:
        self._tools = tools
        self._hidden = hidden

    def __getitem__(self, name: str) -> Tool:
        if name in self._hidden:
            raise KeyError(name)
        return self._tools[name]

    def __contains__(self, name: object) -> bool:
        return name not in self._hidden and name in self._tools

    def __iter__(self) -> Iterator[str]:
        return (n for n in self._tools if n not in self._hidden)

    def __len__(self) -> int:
        return sum(1 for _ in self)

    @property
    def version(self) -> int:
        """Changes whenever the underlying tool set changes."""
        return self._tools.version

    def problem(self, name: str) -> SchemaProblem | None:
        """Why the tool named ``name`` cannot be used (None for a hidden one)."""
        return None if name in self._hidden else self._tools.problem(name)

    @property
    def unusable(self) -> Mapping[str, SchemaProblem]:
        """Every tool found unusable so far, hidden ones left out."""
        problems = self._tools.unusable
        if not self._hidden:
            return problems
        return MappingProxyType({n: p for n, p in problems.items() if n not in self._hidden})

    def descriptors(self) -> list[ToolDescriptor]:
        """Every usable tool's descriptor, hidden ones left out."""
        return [d for d in self._tools.descriptors() if d.name not in self._hidden]


@attrs.frozen
class GroupView:
    """A group as one run sees it: only the tools this agent may use.

    ``known`` and ``tool_names`` leave out hidden tools, so a listing built from a view
    never names or counts them; a group whose tools are all hidden has no view.
    """

    id: str
    name: str
    description: str
    instructions: str | None
    defer: bool
    loaded: bool
    known: tuple[ToolDescriptor, ...]
    tool_names: tuple[str, ...]
    skills: bool = False
    """A skills group: each of its tools is a skill, whose call loads it."""

    @classmethod
    def of(cls, group: ToolGroup, hidden: frozenset[str]) -> GroupView | None:
        """The view of ``group`` without ``hidden`` tools; None when it declares tools and
        every one is hidden."""
        names = group.tool_names
        visible = tuple(n for n in names if n not in hidden) if hidden else tuple(names)
        if names and not visible:
            return None
        return cls(
            id=group.id,
            name=group.name,
            description=group.description,
            instructions=group.instructions,
            defer=group.defer,
            loaded=group.loaded,
            known=tuple(d for d in group.known if d.name not in hidden) if hidden else tuple(group.known),
            tool_names=visible,
            skills=group.skills is not None,
        )


class Catalog(Sequence[ToolDescriptor]):
    """Every tool an agent may use in a run, in order (loaded tools first), with a lookup
    by name. Immutable: a new one is made when something changes."""

    def __init__(self, tools: Sequence[ToolDescriptor], by_name: Mapping[str, ToolDescriptor]) -> None:
        self._tools = tools
        self._by_name = by_name

    @classmethod
    def of(
        cls, loaded: Iterable[ToolDescriptor], groups: Iterable[GroupView], unusable: Mapping[str, object]
    ) -> Catalog:
        by_name = known_tools(loaded, groups, skip=unusable)
        return cls(tuple(by_name.values()), MappingProxyType(by_name))

    @overload
    def __getitem__(self, index: int) -> ToolDescriptor: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[ToolDescriptor]: ...
    def __getitem__(self, index: int | slice) -> ToolDescriptor | Sequence[ToolDescriptor]:
        return self._tools[index]

    def __len__(self) -> int:
        return len(self._tools)

    def __iter__(self) -> Iterator[ToolDescriptor]:
        return iter(self._tools)

    def find(self, name: str) -> ToolDescriptor | None:
        """The descriptor of the tool named ``name``, or None."""
        return self._by_name.get(name)

    @property
    def by_name(self) -> Mapping[str, ToolDescriptor]:
        return self._by_name


class Declares(Protocol):
    """A group, or a view of one: the tools it declares before loading."""

    @property
    def known(self) -> Sequence[ToolDescriptor]: ...


def known_tools(
    loaded: Iterable[ToolDescriptor], groups: Iterable[Declares], *, skip: Container[str] = ()
) -> dict[str, ToolDescriptor]:
    """Loaded tools, then the tools groups declare that are not loaded (and not in
    ``skip``), by name, in that order: what a run's catalog and the runtime's universe
    both are, over different tools."""
    loaded = loaded if isinstance(loaded, (list, tuple)) else list(loaded)
    by_name = {d.name: d for d in loaded}  # names are unique, as a tool set's are: one C-speed pass
    if len(by_name) != len(loaded):  # a repeated name: the first one stays
        by_name = {}
        for d in loaded:
            by_name.setdefault(d.name, d)
    for g in groups:
        for d in g.known:
            if d.name not in by_name and d.name not in skip:
                by_name[d.name] = d
    return by_name


def group_views(
    groups: Mapping[str, ToolGroup], hidden: frozenset[str], hidden_groups: frozenset[str]
) -> dict[str, GroupView]:
    """The views of every group a run may see, by id."""
    out: dict[str, GroupView] = {}
    for gid, g in groups.items():
        if gid in hidden_groups:
            continue
        view = GroupView.of(g, hidden)
        if view is not None:
            out[gid] = view
    return out


__all__ = ["Catalog", "GroupView", "ScopedTools", "group_views"]
