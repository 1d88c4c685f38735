"""``Parts``: what a runtime is composed of (model, tools and groups, the plugin host, the
event bus, secrets, the scope's rules, token accounting, profile state), and all a run
reads of it. The run machinery (``Run``, ``RunContext``, ``ToolCalls``, ``Scoping``) holds
these parts, never the ``Runtime``, which adds only the ways to start runs and sessions.

Every event the bus carries also reaches the plugins' ``greenroom_event`` hook, with the
run it belongs to.
"""

from __future__ import annotations

import logging
from collections import deque
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import attrs

from greenroom import events as ev
from greenroom._support.redact import Secrets, mask_json
from greenroom.config import AgentConfig, ResultsConfig
from greenroom.models import Model, ModelRequest, supports_native_tool_search
from greenroom.plugins.host import PluginHost
from greenroom.state import Scope, StateRegistry, StateStore, register_core_state
from greenroom.tokens.accounting import RequestAccounting
from greenroom.tokens.media import model_family
from greenroom.tools import Tool, ToolDescriptor
from greenroom.tools.groups import ToolGroup
from greenroom.tools.schema.problem import SchemaProblem
from greenroom.tools.toolset import DuplicateToolError, ToolSet

if TYPE_CHECKING:
    from greenroom.config import RuntimeConfig
    from greenroom.mcp import McpToolset

log = logging.getLogger("greenroom")

_KEPT_RELISTINGS = 64  # a run further behind judges every tool again


class Parts:
    """A runtime's composed parts: built once, shared by all its runs."""

    def __init__(
        self,
        *,
        model: Model,
        tools: Iterable[Tool] = (),
        host: PluginHost,
        agent: AgentConfig | None = None,
        events: ev.EventBus,
        groups: Iterable[ToolGroup] = (),
        config: RuntimeConfig | None = None,
        mcp: McpToolset | None = None,
    ) -> None:
        self.secrets = Secrets()
        """Values nothing the model reads or an event carries may show (an MCP server's env
        and header values, URL credentials, in every encoding ``Secrets`` knows)."""
        if mcp is not None:  # known before the first event: those of the build are masked too
            self.secrets.merge(mcp.secrets)
        self.agent = agent or AgentConfig()
        self.config = config
        """The config the runtime was built from; None when built in Python."""
        self.mcp = mcp
        """The ``[[tools.mcp]]`` servers' toolset, when there are any."""
        self.groups: dict[str, ToolGroup] = {}
        for g in groups:
            if g.id in self.groups:
                raise DuplicateToolError(f"two tool groups have the id {g.id!r}; group ids must be unique")
            self.groups[g.id] = g
        self.model = model
        self.host = host
        host.hook_timeout = self.agent.tool_timeout  # a hook that waits is bounded like a tool
        self.events = events
        self.events.redact = self._masked_event
        self.registry = StateRegistry()
        register_core_state(self.registry)
        host.call_sync("greenroom_register_state", registry=self.registry)
        # a tool whose schema is invalid is reported as it loads (at build, or when its group loads)
        self.tools = ToolSet(tools, on_unusable=self._report_unusable)
        self.tools.note_known(d for g in self.groups.values() for d in g.known)
        self.user_tool_names = frozenset(self.tools)
        plugin_tools: set[str] = set()
        for contributed in host.call_sync("greenroom_tools", tools=self.tools, groups=self.groups):
            for t in contributed or ():
                name = t.descriptor.name
                plugin_tools.add(name)
                if name in self.user_tool_names:
                    raise DuplicateToolError(
                        f"a plugin adds a tool named {name!r}, and one of the agent's tools has that name; "
                        'rename it (for an MCP server with naming = "bare", use naming = "prefixed")'
                    )
                self.tools.add(t)
        # tools a plugin contributed run with the run's context (``ToolCallContext.run``)
        self.plugin_tool_names = frozenset(plugin_tools)
        self.groups_version = 0  # bumped when a group loads, so views of the groups can be reused
        self.group_failures: dict[str, str] = {}
        """Why each group's last load failed (masked), until one succeeds."""
        self.relisted_total = 0
        """How many times a source listed its tools again and they changed."""
        self.relistings: deque[tuple[int, tuple[ToolDescriptor, ...]]] = deque(maxlen=_KEPT_RELISTINGS)
        """The latest of those changes (number, tools it added), for each run to judge
        the added tools before it offers them (``Scoping.catch_up``)."""
        self._profiles: dict[str, StateStore] = {}
        self.accounting = RequestAccounting(model_family(model))
        self._closers: list[Any] = []
        self.results = config.tools.results if config is not None else ResultsConfig()
        """What becomes of tool results (``[tools.results]``: compaction)."""

    @property
    def profile_state(self) -> StateStore:
        """The agent's profile state (learned priors, say): what outlives its sessions."""
        return self.profile_of(self.agent.id)

    def profile_of(self, agent_id: str) -> StateStore:
        """The profile state of one agent id: ``greenroom serve`` serving each client as an agent of
        its own (``serve --per-client``) keeps one per client, never one they overwrite."""
        store = self._profiles.get(agent_id)
        if store is None:
            store = self._profiles[agent_id] = StateStore(self.registry, Scope.PROFILE)
        return store

    def on_close(self, closer: Any) -> None:
        self._closers.append(closer)

    def _report_unusable(self, tool: str, problem: SchemaProblem) -> None:
        log.info("tool %r is unusable: its parameter schema is invalid (%s)", tool, problem)
        self.events.emit(
            ev.ToolUnusable(tool=tool, fault=problem.fault.value, where=problem.where, problem=problem.detail)
        )

    async def aclose(self) -> None:
        for closer in reversed(self._closers):
            r = closer()
            if hasattr(r, "__await__"):
                await r
        self._closers.clear()

    # -- groups ------------------------------------------------------------------------
    def group_of(self, tool_name: str) -> ToolGroup | None:
        """The group that declares ``tool_name`` (before or after loading)."""
        for g in self.groups.values():
            if tool_name in g.tool_names:
                return g
        return None

    def failed_group(self, tool_name: str) -> tuple[str, str] | None:
        """The group ``tool_name`` is of (by its known names or its prefix) and why its
        last load failed, when it did."""
        for group_id, why in self.group_failures.items():
            g = self.groups.get(group_id)
            if g is not None and (tool_name in g.tool_names or (g.prefix and tool_name.startswith(g.prefix))):
                return group_id, why
        return None

    async def load_group(self, group_id: str, step: int = 0) -> list[Tool]:
        """Load a group once and make its tools callable; errors propagate to the caller."""
        group = self.groups[group_id]
        first = not group.loaded
        try:
            tools = await group.load()
        except Exception as exc:
            why = f"{type(exc).__name__}: {exc}"
            self.group_failures[group_id] = self.secrets.mask(why)
            self.events.emit(ev.GroupLoaded(step=step, group=group_id, error=why))
            raise
        self.group_failures.pop(group_id, None)
        if first:
            self.groups_version += 1
            for t in tools:
                self.tools.add(t, replace=True)
            self.events.emit(ev.GroupLoaded(step=step, group=group_id, tools=tuple(t.descriptor.name for t in tools)))
        return tools

    def follow_listings(self) -> None:
        """Take in the tools MCP servers listed again since the last call (each server
        that said its tools changed, and each whose skills changed): new tools join, gone
        ones leave, for every run."""
        if self.mcp is None:
            return
        for server in self.mcp.take_changed():
            self._relisted(server.group_id, list(server.tools()))
        for group, skills in self.mcp.take_changed_skills():
            self.groups.setdefault(group.id, group)  # a server that offers skills only now
            self._relisted(group.id, skills)

    def _relisted(self, group_id: str, tools: list[Tool]) -> None:
        descriptors = [t.descriptor for t in tools]
        group = self.groups.get(group_id)
        if group is not None:
            before = set(group.tool_names)
            held = group.relisted(descriptors, tools)
            self.tools.note_known(descriptors)
            tools = held or []  # a group not loaded yet brings its tools when it loads
        else:  # a server whose tools are not deferred: its tools are the runtime's own
            before = {n for n in self.tools if self.tools[n].descriptor.group == group_id}
        for t in tools:
            self.tools.add(t, replace=True)
        names = {d.name for d in descriptors}
        removed = tuple(sorted(before - names))
        for name in removed:
            self.tools.remove(name)
        added = tuple(d for d in descriptors if d.name not in before)
        self.groups_version += 1
        self.relisted_total += 1
        self.relistings.append((self.relisted_total, added))
        self.events.emit(ev.ToolsRelisted(group=group_id, added=tuple(d.name for d in added), removed=removed))

    # -- events ------------------------------------------------------------------------
    def _masked_event(self, event: ev.Event) -> ev.Event:
        """The event with every secret the runtime knows masked in its text and JSON fields
        (a plugin's error quoting a token, a tool's result, the error that ended a run, a
        call's arguments, the calls a model asked for)."""
        secrets = self.secrets
        if not secrets:
            return event
        changes = {}
        for field in attrs.fields(type(event)):
            value = getattr(event, field.name)
            if not field.init or not value:
                continue
            if isinstance(value, str):
                masked: Any = secrets.mask(value)
                if masked != value:
                    changes[field.name] = masked
            elif isinstance(value, (dict, list, tuple)):
                masked = mask_json(value, secrets.mask)
                if masked is not value:
                    changes[field.name] = masked
        return attrs.evolve(event, **changes) if changes else event

    def describe_request(self, request: ModelRequest) -> ev.RequestSent:
        """Token counts of the three parts of a request and the cacheable-prefix hash."""
        self.accounting.family = model_family(self.model)  # images are priced by the model's rules
        return self.accounting.describe_request(request, hosted_search=supports_native_tool_search(self.model))
