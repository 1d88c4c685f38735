"""The agent's tools as this plugin sees them: loaded tools the agent may use, then the
tools of groups not loaded yet (from their catalogs), never the plugin's own, and never
a tool whose parameter schema is invalid (``ToolSet.problem``): it is not listed, found or
sent, and a call to it gets its problem from the runtime."""

from __future__ import annotations

from greenroom import RunContext, ToolDescriptor
from greenroom_deferred.descriptors import OWN_TOOLS


def agent_tools(ctx: RunContext) -> list[ToolDescriptor]:
    """Every tool the agent may use: loaded ones, then group tools not loaded yet."""
    seen: set[str] = set()
    out: list[ToolDescriptor] = []
    for d in ctx.visible_descriptors():
        if d.name not in OWN_TOOLS:
            out.append(d)
            seen.add(d.name)
    unusable = ctx.tools.unusable
    for g in ctx.groups.values():
        for d in g.known:
            if d.name not in seen and d.name not in ctx.hidden and d.name not in unusable:
                out.append(d)
                seen.add(d.name)
    return out


def grouped_names(ctx: RunContext, *, deferred_only: bool = False) -> set[str]:
    """Names every group declares (or only the groups that defer their tools)."""
    return {d.name for g in ctx.groups.values() if g.defer or not deferred_only for d in g.known}


def find_descriptor(ctx: RunContext, name: str) -> ToolDescriptor | None:
    """A tool's descriptor, loaded or from its group's catalog (None for an unusable tool)."""
    if ctx.tools.problem(name) is not None:
        return None
    if name in ctx.tools:
        return ctx.tools[name].descriptor
    for g in ctx.groups.values():
        for d in g.known:
            if d.name == name:
                return d
    return None
