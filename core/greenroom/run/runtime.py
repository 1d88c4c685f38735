"""The runtime: a composed agent (its ``Parts``: model, tools, groups, plugins, events) and
the ways to run it.

A run's phases are driven by ``greenroom.run.driver.Run``, for every caller: ``run``
drives one to an outcome with the model, ``stream`` does the same while its caller reads
the model's text and the run's events as they happen, ``preview`` builds its first
request, and each MCP client of ``greenroom serve`` holds one (``start_run``). A run holds the
runtime's parts, not the runtime. Whatever ends a run, RunEnd reaches every plugin and the
trace ends with ``run_end``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from greenroom import events as ev
from greenroom._support.redact import Secrets
from greenroom.config import AgentConfig
from greenroom.models import Model, ModelRequest, TextListener
from greenroom.plugins.host import PluginHost
from greenroom.plugins.readiness import Readiness, plugin_readiness
from greenroom.run.calls import ToolCalls
from greenroom.run.context import RunContext, RunKind, RunOutcome, search_tools
from greenroom.run.driver import Run
from greenroom.run.observers import Observers
from greenroom.run.parts import Parts
from greenroom.run.policy import ToolPolicy
from greenroom.run.scope import RunFilter, Scoping
from greenroom.run.session import Session
from greenroom.run.streaming import RunStream
from greenroom.search import Ranking, ScoredTool, SearchQuery
from greenroom.state import StateRegistry, StateStore
from greenroom.tools import Tool, ToolDescriptor
from greenroom.tools.groups import ToolGroup
from greenroom.tools.toolset import ToolSet

if TYPE_CHECKING:
    from greenroom.config import RuntimeConfig
    from greenroom.mcp import McpToolset


class Runtime:
    """A composed agent runtime: model, tools, plugins, events; ``parts`` holds them."""

    def __init__(
        self,
        *,
        model: Model,
        tools: Iterable[Tool] = (),
        host: PluginHost,
        agent: AgentConfig | None = None,
        events: ev.EventBus | None = None,
        groups: Iterable[ToolGroup] = (),
        policy: ToolPolicy | None = None,
        config: RuntimeConfig | None = None,
        mcp: McpToolset | None = None,
    ) -> None:
        bus = events or ev.EventBus()
        if host.has_impls("greenroom_event"):  # from the first event of the build on, observers see all
            bus.subscribe(Observers(host, bus))
        self.parts = Parts(
            model=model, tools=tools, host=host, agent=agent, events=bus, groups=groups, config=config, mcp=mcp
        )
        self.scoping = Scoping(self.parts, policy or ToolPolicy())
        """Works out each run's scope: the policy, plugins' hidden tools, what loads later."""
        self.tool_calls = ToolCalls(self.parts, self.scoping)

    # -- what it is made of (the parts' own, read-only here) ---------------------------
    @property
    def model(self) -> Model:
        return self.parts.model

    @model.setter
    def model(self, model: Model) -> None:  # another model for the runs to come
        self.parts.model = model

    @property
    def agent(self) -> AgentConfig:
        return self.parts.agent

    @agent.setter
    def agent(self, agent: AgentConfig) -> None:  # other limits for the runs to come
        self.parts.agent = agent
        self.parts.host.hook_timeout = agent.tool_timeout

    @property
    def config(self) -> RuntimeConfig | None:
        """The config the runtime was built from; None when built in Python."""
        return self.parts.config

    @property
    def mcp(self) -> McpToolset | None:
        """The ``[[tools.mcp]]`` servers' toolset, when there are any."""
        return self.parts.mcp

    @property
    def tools(self) -> ToolSet:
        return self.parts.tools

    @property
    def groups(self) -> Mapping[str, ToolGroup]:
        return self.parts.groups

    @property
    def user_tool_names(self) -> frozenset[str]:
        """The names of the agent's own tools (not those plugins contributed)."""
        return self.parts.user_tool_names

    @property
    def plugin_tool_names(self) -> frozenset[str]:
        """The names of the tools plugins contributed (their own search tools, say)."""
        return self.parts.plugin_tool_names

    @property
    def host(self) -> PluginHost:
        return self.parts.host

    @property
    def events(self) -> ev.EventBus:
        return self.parts.events

    @property
    def secrets(self) -> Secrets:
        return self.parts.secrets

    @property
    def registry(self) -> StateRegistry:
        return self.parts.registry

    @property
    def profile_state(self) -> StateStore:
        """The agent's profile state (learned priors, say): what outlives its sessions."""
        return self.parts.profile_of(self.parts.agent.id)

    def profile_of(self, agent_id: str) -> StateStore:
        return self.parts.profile_of(agent_id)

    def universe(self) -> list[ToolDescriptor]:
        """Every tool the runtime knows that a model could use (``Scoping.universe``)."""
        return self.scoping.universe()

    def group_of(self, tool_name: str) -> ToolGroup | None:
        """The group that declares ``tool_name`` (before or after loading)."""
        return self.parts.group_of(tool_name)

    async def load_group(self, group_id: str, step: int = 0) -> list[Tool]:
        """Load a group once and make its tools callable; errors propagate to the caller."""
        return await self.parts.load_group(group_id, step)

    def follow_listings(self) -> None:
        """Take in the tools MCP servers listed again since the last call."""
        self.parts.follow_listings()

    async def search(
        self, query: SearchQuery, candidates: Sequence[ToolDescriptor], ctx: RunContext | None = None
    ) -> tuple[list[ScoredTool], list[Ranking]]:
        """Rank candidates through the search hooks (``RunContext.search`` outside a run)."""
        return await search_tools(self.parts.host, query, candidates, ctx)

    def call_hook(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call a contribution hook outside a run (every implementation, in pluggy's order)
        and return the non-None answers: how an application of the runtime calls a hook
        its plugin declared (inside a run, ``RunContext.call_hook``). A hook that no
        installed plugin declares, or that nothing implements, answers nothing."""
        host = self.parts.host
        if getattr(host.hook, hook_name, None) is None or not host.has_impls(hook_name):
            return []
        return [r for r in host.call_sync(hook_name, **kwargs) if r is not None]

    async def readiness(self) -> list[Readiness]:
        """Whether the runtime can serve now, one check per thing (a server's readiness
        probe): each upstream MCP server the policy leaves a tool of (listed, and not
        failing to start: read as it is, nothing is started), then what each plugin's
        ``greenroom_readiness`` says, each bounded by the agent's ``tool_timeout``. A
        plugin that fails or answers late is not ready, named with its distribution."""
        mcp = self.parts.mcp
        upstream = mcp.readiness() if mcp is not None else []
        return upstream + await plugin_readiness(self.parts.host, self, self.parts.agent.tool_timeout)

    def on_close(self, closer: Any) -> None:
        """Run ``closer`` (sync or async) when the runtime closes."""
        self.parts.on_close(closer)

    async def aclose(self) -> None:
        await self.parts.aclose()

    # -- runs ------------------------------------------------------------------------
    def start_run(
        self,
        session: Session | None = None,
        user_input: str = "",
        *,
        kind: RunKind = RunKind.AGENT,
        agent: AgentConfig | None = None,
        restrict: RunFilter | None = None,
    ) -> Run:
        """A new run to step through (``Run.start``, ``next_request``, ... ``end``).

        A server of MCP clients starts one of kind ``CLIENT`` per client (its ``agent``
        may name the client, so that priors are learned per client), with ``restrict``:
        what that client's caller may not see beside ``[tools.policy]`` (a ``RunFilter``),
        kept out of the run wherever the policy is (list, search, load, call)."""
        session = session or self.session()
        return Run(
            self.parts, self.scoping, self.tool_calls, session, user_input, kind=kind, agent=agent, restrict=restrict
        )

    async def run(self, session: Session, user_input: str, *, on_text: TextListener | None = None) -> RunOutcome:
        """Drive one user input to an outcome (``Run.drive``). RunEnd runs and ``run_end``
        ends the trace whatever ends the run; a phase hook's failure, a model error or any
        other exception is raised after that (the exception itself, never a task group).
        ``on_text`` hears the model's text as it arrives, when the model streams."""
        return await self.start_run(session, user_input).drive(self.model, on_text=on_text)

    def stream(self, session: Session, user_input: str) -> RunStream:
        """Run one user input while reading it as it happens: ``async with
        runtime.stream(session, text) as run: async for item in run: ...`` yields the
        model's text (``TextDelta``, when the model streams) and the run's events, the last
        being ``RunFinished``; ``run.outcome`` is then set. Leaving the block early cancels
        the run (RunEnd runs, the session stays valid). See ``greenroom.run.streaming``."""
        return RunStream(self.start_run(session, user_input), self.model)

    async def preview(self, session: Session | None = None) -> ModelRequest:
        """The request the model would get on the first step, without calling it: a run
        of kind ``PREVIEW`` that starts, builds its first request and ends."""
        run = self.start_run(session, kind=RunKind.PREVIEW)
        try:
            await run.start()
            return await run.next_request()
        finally:
            await run.end(run.outcome_of("preview"))

    # -- sessions -------------------------------------------------------------------
    def session(self, session_id: str | None = None) -> Session:
        return Session(self, session_id)

    def load_session(self, path: str | Path, *, take_over: bool = False) -> Session:
        """Resume a saved session (``Session.load``: a broken file or another agent's
        session is a ``SessionError`` naming the file, unless ``take_over``)."""
        return Session.load(self, path, take_over=take_over)
