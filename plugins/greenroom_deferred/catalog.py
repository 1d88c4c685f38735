"""The agent's tools as this plugin sees them, kept between calls.

``ctx.catalog()`` is every tool the agent may use (loaded, then group tools not loaded
yet; never a hidden or unusable one), and stays the same object until something
changes. What this plugin derives from it (its tools without the plugin's own, the
deferred ones of a session, the names each group declares) is kept under that object
and the session's ``DeferralState.revision``, so a search or a step does not walk a
100,000-tool catalog again to rebuild the same lists.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain

from greenroom import RunContext, ToolDescriptor
from greenroom.kit import IdentityMemo
from greenroom_deferred.descriptors import OWN_TOOLS
from greenroom_deferred.state import DeferralState

_KEPT = 8  # derived lists kept per kind: a few runtimes and sessions in one process

# Held weakly by the catalog (or session state) they were derived from: what a closed
# runtime made goes with it, not kept for the collector to scan in every later collection.
_agent: IdentityMemo[Sequence[ToolDescriptor]] = IdentityMemo(_KEPT, weak=True)
_deferred: IdentityMemo[list[ToolDescriptor]] = IdentityMemo(_KEPT, weak=True)
_grouped: IdentityMemo[tuple[frozenset[str], frozenset[str]]] = IdentityMemo(_KEPT, weak=True)
_searched: IdentityMemo[Sequence[ToolDescriptor]] = IdentityMemo(_KEPT, weak=True)


def agent_tools(ctx: RunContext) -> Sequence[ToolDescriptor]:
    """Every tool the agent may use, the plugin's own left out (the same tuple until the
    catalog changes)."""
    catalog = ctx.catalog()
    hit = _agent.lookup((catalog,))
    if hit is not None:
        return hit[0]
    if any(name in catalog.by_name for name in OWN_TOOLS):
        return _agent.put((catalog,), tuple(d for d in catalog if d.name not in OWN_TOOLS))
    return _agent.put((catalog,), tuple(catalog))  # none of its own: a copy at C speed


def searched_tools(ctx: RunContext) -> Sequence[ToolDescriptor]:
    """The tools a keyword search ranks: the agent's, but for those never deferred (sent
    on every request, as a plugin's own read tool is), which the model has in view
    anyway. The same set ``greenroom rank index`` indexes for the catalog, so a run's
    first search finds its indexes built."""
    # keyed on the catalog, as the agent's tools are: a tuple takes no weak reference, and
    # keyed on one nothing was kept, so each search walked 100,000 tools again (28 ms)
    catalog = ctx.catalog()
    hit = _searched.lookup((catalog,))
    if hit is not None:
        return hit[0]
    tools = agent_tools(ctx)
    if any(d.deferrable == "never" for d in tools):
        return _searched.put((catalog,), tuple(d for d in tools if d.deferrable != "never"))
    return _searched.put((catalog,), tools)


def deferred_tools(ctx: RunContext, st: DeferralState) -> Sequence[ToolDescriptor]:
    """The agent's tools that are deferred in this session (the same list object until the
    catalog or a placement changes: rankers key their own caches on it)."""
    tools = agent_tools(ctx)
    hit = _deferred.lookup((st, tools), st.revision)
    if hit is not None:
        return hit[0]
    placed = st.modes.get  # inlined ``st.is_deferred``: this runs once per tool
    deferred = [d for d in tools if (p := placed(d.name)) is not None and p.mode == "deferred"]
    return _deferred.put((st, tools), deferred, st.revision)


def keep_deferred(ctx: RunContext, st: DeferralState, deferred: list[ToolDescriptor]) -> None:
    """Take ``deferred`` as the session's deferred tools at its current revision: placing
    the session found them (``Plan.deferred``), so its first step does not look again."""
    _deferred.put((st, agent_tools(ctx)), deferred, st.revision)


def grouped_names(ctx: RunContext, *, deferred_only: bool = False) -> frozenset[str]:
    """Names every group declares (or only the groups that defer their tools)."""
    catalog = ctx.catalog()
    hit = _grouped.lookup((catalog,))
    if hit is None:
        groups = ctx.groups.values()
        # a view's ``tool_names`` are its known tools' names: gathered at C speed, without
        # visiting 100,000 descriptors; and when every group defers (MCP servers do), the
        # two sets are one
        every = frozenset(chain.from_iterable(g.tool_names for g in groups))
        deferring = (
            every
            if all(g.defer for g in groups)
            else frozenset(chain.from_iterable(g.tool_names for g in groups if g.defer))
        )
        hit = (_grouped.put((catalog,), (every, deferring)),)
    return hit[0][1] if deferred_only else hit[0][0]


def find_descriptor(ctx: RunContext, name: str) -> ToolDescriptor | None:
    """A tool's descriptor, loaded or from its group's catalog (None for a tool the agent
    may not use, or one whose schema is invalid)."""
    return ctx.catalog().find(name)


_domains: IdentityMemo[dict[str, list[ToolDescriptor]]] = IdentityMemo(_KEPT, weak=True)


def _by_group(ctx: RunContext) -> dict[str, list[ToolDescriptor]]:
    """The agent's tools by their descriptor's group (a tool group's id, or a catalog's
    domain), in catalog order."""
    catalog = ctx.catalog()  # what the agent's tools are derived from, one to one
    hit = _domains.lookup((catalog,))
    if hit is not None:
        return hit[0]
    out: dict[str, list[ToolDescriptor]] = {}
    for d in agent_tools(ctx):
        out.setdefault(d.group or "", []).append(d)
    return _domains.put((catalog,), out)


def domains(ctx: RunContext) -> list[str]:
    """The groups of catalog tools that are not tool groups (a catalog's domains)."""
    return [g for g in _by_group(ctx) if g and g not in ctx.groups]


def group_members(ctx: RunContext, wanted: str) -> tuple[list[ToolDescriptor] | None, str]:
    """The tools of the group ``wanted`` names (a tool group's id or name, or a domain),
    and how to call it; None when there is no such group."""
    views = ctx.groups
    view = views.get(wanted) or next((g for g in views.values() if g.name == wanted), None)
    by_group = _by_group(ctx)
    if view is not None:
        known = {d.name: d for d in view.known}
        loaded = {d.name: d for d in by_group.get(view.id, [])}
        members = [known.get(n) or loaded.get(n) for n in view.tool_names]
        return [d for d in members if d is not None], f"{view.id} ({view.name})"
    if wanted in by_group and wanted:
        return by_group[wanted], wanted
    return None, wanted


def group_sizes(ctx: RunContext) -> dict[str, int]:
    """How many tools each group of the agent's tools has (tool groups and domains)."""
    return {g: len(tools) for g, tools in _by_group(ctx).items() if g}
