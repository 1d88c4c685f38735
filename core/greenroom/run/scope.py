"""Working out a run's scope: the config's policy over every tool source, then the
``greenroom_hidden_tools`` hook over the same universe (``greenroom.run.policy``).

The universe is every tool a model could reach: loaded tools, and the tools groups and
MCP servers declare before they load (catalogs, cached listings). A group whose tools
are all named ``prefix...`` (an MCP server's prefixed names) is hidden whole when the
policy hides every such name, before it is ever started. A group's load that brings
tools its catalog did not name gets those judged too. A run may also be restricted
(``Scoping.restrict``, an MCP client's view by its caller): its filter is applied beside the policy
everywhere the policy is.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import Iterable, Sequence
from itertools import chain
from typing import TYPE_CHECKING, Protocol

from greenroom import events as ev
from greenroom.failures import PluginHookError
from greenroom.models import RequestDraft
from greenroom.run.policy import HiddenBy, HideReason, ToolPolicy
from greenroom.run.views import known_tools
from greenroom.tools import Tool, ToolDescriptor
from greenroom.tools.groups import ToolGroup

if TYPE_CHECKING:
    from greenroom.run.context import RunContext
    from greenroom.run.parts import Parts

log = logging.getLogger("greenroom")


class RunFilter(Protocol):
    """More that one run may not use, beside the policy (an MCP client's view by its caller)."""

    def tool_hidden(self, name: str, group: str | None) -> HideReason | None:
        """Why the tool ``name`` (of ``group``, when known) is hidden, or None."""
        ...

    def group_hidden(self, group: str) -> HideReason | None:
        """Why every tool of the group ``group`` is hidden, or None."""
        ...


class Scoping:
    """Works out each run's scope for one runtime, keeping the policy's answer per name
    (the policy does not change while the runtime lives)."""

    def __init__(self, parts: Parts, policy: ToolPolicy) -> None:
        self._rt = parts
        self.policy = policy
        self._verdicts: dict[str, HideReason | None] = {}
        self._filters: weakref.WeakKeyDictionary[RunContext, RunFilter] = weakref.WeakKeyDictionary()

    def restrict(self, ctx: RunContext, judge: RunFilter) -> None:
        """Hide more from one run than the policy does, wherever the policy applies; set
        before the run starts (its scope is worked out with it)."""
        self._filters[ctx] = judge

    def _filtered(self, ctx: RunContext, tools: Iterable[tuple[str, str | None]]) -> list[tuple[str, HideReason]]:
        judge = self._filters.get(ctx)
        if judge is None:
            return []
        out: list[tuple[str, HideReason]] = []
        for name, group in tools:
            why = judge.tool_hidden(name, group)
            if why is not None:
                out.append((name, why))
        return out

    def universe(self) -> list[ToolDescriptor]:
        """Every usable tool the runtime knows: loaded ones, then group tools not loaded
        yet (from their catalogs or cached listings)."""
        rt = self._rt
        # a loaded tool with an invalid schema is skipped, not taken from its group's catalog
        return list(known_tools(rt.tools.descriptors(), rt.groups.values(), skip=rt.tools).values())

    def policy_hides(self, names: Iterable[str]) -> list[tuple[str, HideReason]]:
        """The names the config's policy hides, with why."""
        if self.policy.empty:
            return []
        verdicts, plugin_tools = self._verdicts, self._rt.plugin_tool_names
        out: list[tuple[str, HideReason]] = []
        for name in names:
            if name in verdicts:
                why = verdicts[name]
            else:
                why = verdicts[name] = self.policy.reason(name, plugin_tool=name in plugin_tools)
            if why is not None:
                out.append((name, why))
        return out

    def group_hidden(self, group: ToolGroup) -> HideReason | None:
        """Why the policy hides every tool ``group`` can have, judged by its name prefix."""
        if self.policy.empty or not group.prefix:
            return None
        return self.policy.hides_every_name_with(group.prefix)

    async def plugins_hide(self, ctx: RunContext, tools: Sequence[ToolDescriptor]) -> list[tuple[str, HideReason]]:
        """The names ``greenroom_hidden_tools`` implementations hide among ``tools``, each
        with the plugin that named it."""
        host = self._rt.host
        if not tools or not host.has_impls("greenroom_hidden_tools"):
            return []
        out: list[tuple[str, HideReason]] = []
        for plugin, names in await host.call_attributed("greenroom_hidden_tools", ctx=ctx, tools=tools):
            why = HideReason(HiddenBy.PLUGIN, plugin)
            out.extend((n, why) for n in names)  # a collection of str: checked where it was answered
        return out

    async def scope(self, ctx: RunContext) -> None:
        """Fill the run's scope: the policy over every source, then the hook (once)."""
        rt = self._rt
        # the groups loaded so far are in the universe: judged below with everything else
        ctx.groups_seen = rt.groups_version
        ctx.judged_groups.update(g.id for g in rt.groups.values() if g.loaded)
        judge = self._filters.get(ctx)
        if self.policy.empty and judge is None and not rt.host.has_impls("greenroom_hidden_tools"):
            # nothing judges tools one by one: no pass over every tool (100,000 of them)
            for g in rt.groups.values():
                why = self.group_hidden(g)
                if why is not None:
                    ctx.scope.hide_group(g.id, why)
            return
        universe = self.universe()
        # unusable tools too: the error a call to one gets would name it
        ctx.scope.hide(self.policy_hides(chain((d.name for d in universe), rt.tools.unusable)))
        if judge is not None:
            named = chain(((d.name, d.group) for d in universe), ((n, None) for n in rt.tools.unusable))
            ctx.scope.hide(self._filtered(ctx, named))
        for g in rt.groups.values():
            why = self.group_hidden(g) or (judge.group_hidden(g.id) if judge is not None else None)
            if why is not None:
                ctx.scope.hide_group(g.id, why)
        ctx.scope.hide(await self.plugins_hide(ctx, universe))

    async def scope_loaded(self, ctx: RunContext, group: ToolGroup, tools: Sequence[Tool]) -> None:
        """Judge the tools a group's load brought that its catalog did not name (the hook
        is called again with only those). If the hook fails, every such tool is hidden
        from this run (fail closed) and the failure is raised."""
        ctx.judged_groups.add(group.id)
        declared = {d.name for d in group.known}
        await self._judge(ctx, [t.descriptor for t in tools if t.descriptor.name not in declared], group.id)

    async def _judge(self, ctx: RunContext, new: Sequence[ToolDescriptor], source: str) -> None:
        """Judge tools that came after the run's scope was worked out (fail closed: if the
        hook fails, every one of them is hidden from this run, and the failure raised)."""
        if not new:
            return
        ctx.scope.hide(self.policy_hides(d.name for d in new))
        ctx.scope.hide(self._filtered(ctx, ((d.name, d.group or source) for d in new)))
        try:
            hidden = await self.plugins_hide(ctx, new)
        except BaseException:
            why = HideReason(HiddenBy.UNJUDGED, source)
            ctx.scope.hide((d.name, why) for d in new)
            raise
        ctx.scope.hide(hidden)

    async def catch_up(self, ctx: RunContext) -> None:
        """Judge for this run the groups other runs loaded since it last looked (an MCP
        client's run sees the tools another client's call loaded only once judged)."""
        rt = self._rt
        rt.follow_listings()
        if ctx.groups_seen == rt.groups_version:
            return
        ctx.groups_seen = rt.groups_version
        try:
            await self._judge(ctx, self._relisted_since(ctx), "relisted")
        except PluginHookError as exc:  # hidden already: the run goes on without them
            log.debug("%s", exc, exc_info=exc.error)
            ctx.emit(ev.PluginError.of(exc, ctx.step))
        for group in list(rt.groups.values()):
            if group.loaded and group.id not in ctx.judged_groups:
                try:
                    await self.scope_loaded(ctx, group, await group.load())
                except PluginHookError as exc:  # hidden already: the run goes on without them
                    log.debug("%s", exc, exc_info=exc.error)
                    ctx.emit(ev.PluginError.of(exc, ctx.step))

    def _relisted_since(self, ctx: RunContext) -> list[ToolDescriptor]:
        """The tools sources added by listing again since this run last looked; every
        tool there is when the run is further behind than the runtime keeps."""
        rt = self._rt
        seen, ctx.relistings_seen = ctx.relistings_seen, rt.relisted_total
        if seen == rt.relisted_total:
            return []
        if not rt.relistings or rt.relistings[0][0] > seen + 1:
            return self.universe()
        return [d for number, added in rt.relistings if number > seen for d in added]


def keep_in_scope(ctx: RunContext, draft: RequestDraft) -> None:
    """Whatever the BeforeInference plugins did, no hidden tool is sent (or offered to a
    hosted search)."""
    hidden = ctx.hidden
    if not hidden:
        return
    tools = draft.base_tools  # untouched, it is the visible tools: nothing hidden in it
    if tools is not ctx.visible_tools() and any(d.name in hidden for d in tools):
        log.warning("a plugin put hidden tools in the request; they are not sent")
        draft.tools = [d for d in tools if d.name not in hidden]
    if draft.deferred and not hidden.isdisjoint(draft.deferred):
        draft.deferred = draft.deferred - hidden


__all__ = ["RunFilter", "Scoping", "keep_in_scope"]
