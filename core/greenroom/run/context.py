"""What plugins see of a run (``RunContext``), what a gate decides, how a run ended."""

from __future__ import annotations

import enum
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from contextvars import ContextVar
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Literal

import attrs

from greenroom import events as ev
from greenroom._support.arguments import json_text, within_bounds
from greenroom.config import AgentConfig
from greenroom.failures import RunFailure
from greenroom.models import ToolCall, Usage, supports_native_tool_search, supports_programmatic_calls
from greenroom.run.policy import ToolScope
from greenroom.run.views import Catalog, GroupView, ScopedTools, group_views
from greenroom.search import Ranking, ScoredTool, SearchQuery, keyword_search
from greenroom.state import (
    Scope,
    StateStore,
    ToolPriors,
    ToolUsage,
)
from greenroom.tools import Tool, ToolDescriptor, ToolResult

if TYPE_CHECKING:
    from greenroom.plugins.host import PluginHost
    from greenroom.run.parts import Parts
    from greenroom.run.scope import Scoping
    from greenroom.run.session import Session


@attrs.frozen
class Decision:
    """What a BeforeToolExecute gate decided."""

    action: Literal["allow", "block", "answer"]
    reason: str = ""
    result: ToolResult | None = None

    @classmethod
    def allow(cls) -> Decision:
        return cls("allow")

    @classmethod
    def block(cls, reason: str) -> Decision:
        return cls("block", reason=reason)

    @classmethod
    def answer(cls, result: ToolResult | str) -> Decision:
        if isinstance(result, str):
            result = ToolResult(result)
        return cls("answer", result=result)


class RunKind(enum.Enum):
    """Who takes a run's turns: what answers the requests its steps build."""

    AGENT = "agent"
    """A model answers each request and asks for tool calls (``Runtime.run``)."""
    CLIENT = "client"
    """An MCP client of ``greenroom serve`` calls tools itself: each call is a turn of
    its own (a client turn), with no model response, so AfterInference is not called."""
    PREVIEW = "preview"
    """The first request is built and nothing is sent (``Runtime.preview``, ``inspect``)."""


@attrs.frozen
class RunOutcome:
    """How a run ended: its answer (``final``), or why it stopped.

    ``error`` is the message of what ended the run with stop reason ``error``;
    ``failure`` says the same as data (the plugin, distribution and hook when a plugin
    failed).
    """

    run_id: str
    text: str
    steps: int
    stop_reason: Literal["final", "max_steps", "cancelled", "error", "preview"]
    usage: Usage
    error: str | None = None
    failure: RunFailure | None = None


class RunContext:
    """What plugins see of a run: the whole plugin surface. Tools never see this.

    Identity: ``run_id``, ``session_id``, ``session_file``, ``input``, ``step``, ``agent``,
    ``kind`` (who takes the turns: a model, an MCP client, or nobody in a preview).
    State: ``state`` (this run), ``session_state``, ``profile_state``, and the shared
    vocabulary ``usage`` (calls of this run) and ``priors`` (learned per agent).
    Tools, scoped: ``tools`` (the loaded tools this agent may use),
    ``visible_descriptors()``, ``catalog()`` (loaded and not yet loaded, by name),
    ``groups`` (the tools each group may give it),
    ``group_of``, ``load_group``; ``hidden`` and ``scope`` say what is left out and why.
    The model: ``model_name``, ``hosted_tool_search`` and ``hosted_programmatic_calls``.
    Doing things: ``emit`` an event, ``search`` through the ranking hooks, ``call_tool``
    (a tool of the run, by name, as the model's call would go), ``call_hook`` (a
    contribution hook, such as one a plugin declared), ``on_close`` (release something
    when the runtime closes), ``config_dir`` (where a config key's relative paths point).
    """

    def __init__(
        self,
        parts: Parts,
        scoping: Scoping,
        session: Session,
        run_id: str,
        user_input: str,
        *,
        agent: AgentConfig | None = None,
        kind: RunKind = RunKind.AGENT,
    ) -> None:
        self._parts = parts
        self._scoping = scoping
        self._session = session
        self._agent = agent or parts.agent
        self._loop_thread = threading.get_ident()  # events from a hook's worker thread are sent here
        self.run_id = run_id
        self.input = user_input
        self.kind = kind
        self.step = 0
        self.judged_groups: set[str] = set()
        """Groups whose loaded tools this run's scope has judged (``Scoping.scope_loaded``)."""
        self.groups_seen = parts.groups_version
        """The runtime's group loads this run has caught up with (``Scoping.catch_up``)."""
        self.relistings_seen = parts.relisted_total
        """The changed listings whose new tools this run has judged (``Scoping.catch_up``)."""
        self.closed = False
        """The run has ended: what a hook left running (a timed-out plain hook) emits is dropped."""
        self.state = StateStore(parts.registry, Scope.RUN)
        self.scope = ToolScope()
        self.usage_total = Usage()
        self._visible: tuple[int, frozenset[str], tuple[ToolDescriptor, ...]] | None = None
        self._views: tuple[tuple[int, int, frozenset[str], frozenset[str]], dict[str, GroupView]] | None = None
        self._catalog: tuple[tuple[int, int, frozenset[str], frozenset[str]], Catalog] | None = None

    # ---------------------------------------------------------------- identity and state
    @property
    def session_id(self) -> str:
        return self._session.id

    @property
    def session_file(self) -> Path | None:
        """The file this run's session was resumed from, is held at or was saved to last
        (``Session.file``); None for a session that has none yet."""
        return self._session.file

    @property
    def agent(self) -> AgentConfig:
        """The agent this run is for (in ``greenroom serve --per-client``, its id names the client)."""
        return self._agent

    @property
    def session_state(self) -> StateStore:
        return self._session.state

    @property
    def profile_state(self) -> StateStore:
        """The profile state of this run's agent (``agent.id``): learned across its sessions."""
        return self._parts.profile_of(self._agent.id)

    @property
    def usage(self) -> ToolUsage:
        return self.state[ToolUsage]

    @property
    def priors(self) -> ToolPriors:
        return self.profile_state[ToolPriors]

    # ---------------------------------------------------------------- tools and groups
    @property
    def hidden(self) -> frozenset[str]:
        """The tools this agent may not use in this run (``scope.reasons`` says why)."""
        return self.scope.names

    @property
    def tools(self) -> ScopedTools:
        """The loaded tools this agent may use, plugin tools included (read-only)."""
        return ScopedTools(self._parts.tools, self.scope.names)

    def visible_descriptors(self) -> list[ToolDescriptor]:
        """Every tool this agent may use in this run (hidden tools removed); a fresh list."""
        return list(self.visible_tools())

    def visible_tools(self) -> tuple[ToolDescriptor, ...]:
        """``visible_descriptors()`` without the copy: the same tuple until the tool set or
        the hidden set changes."""
        tools = self._parts.tools
        cached = self._visible
        if cached is None or cached[0] != tools.version or cached[1] is not self.hidden:
            hidden, every = self.hidden, tools.descriptors()
            # nothing hidden (the usual case): one copy at C speed, not a test per tool
            visible = tuple(d for d in every if d.name not in hidden) if hidden else tuple(every)
            cached = self._visible = (tools.version, self.hidden, visible)
        return cached[2]

    def catalog(self) -> Catalog:
        """Every tool this agent may use: the loaded ones, then the tools of groups not
        loaded yet (from their catalogs), never a hidden or unusable one. The same object
        until a tool, a group or the scope changes, so plugins can key their own caches
        on it; built in one pass over the tools when it does."""
        rt, scope = self._parts, self.scope
        key = (rt.tools.version, rt.groups_version, scope.names, scope.groups)
        if self._catalog is None or self._catalog[0] != key:
            self._catalog = (key, Catalog.of(self.visible_descriptors(), self.groups.values(), rt.tools.unusable))
        return self._catalog[1]

    @property
    def groups(self) -> Mapping[str, GroupView]:
        """The groups this agent may use, by id (loaded or not), each without its hidden
        tools; a group whose tools are all hidden is not here."""
        rt, scope = self._parts, self.scope
        key = (rt.groups_version, rt.tools.version, scope.names, scope.groups)
        if self._views is None or self._views[0] != key:
            self._views = (key, group_views(rt.groups, scope.names, scope.groups))
        return MappingProxyType(self._views[1])

    def group_of(self, tool_name: str) -> GroupView | None:
        """The group that declares ``tool_name`` (before or after loading); None for a
        tool this agent may not use."""
        if tool_name in self.scope.names:
            return None
        group = self._parts.group_of(tool_name)
        return None if group is None else self.groups.get(group.id)

    async def load_group(self, group_id: str) -> list[Tool]:
        """Load a group once (later calls return its tools) and make its tools callable;
        a failed load raises and can be retried. Returns the tools this agent may use;
        a group it may not use is a ``KeyError``, and is never loaded."""
        if group_id not in self.groups:
            raise KeyError(f"unknown group {group_id!r}")
        group = self._parts.groups[group_id]
        tools = await self._parts.load_group(group_id, self.step)
        await self._scoping.scope_loaded(self, group, tools)
        hidden = self.scope.names
        return [t for t in tools if t.descriptor.name not in hidden]

    # ---------------------------------------------------------------- the model
    @property
    def model_name(self) -> str:
        """How the model presents itself (for messages, not for decisions)."""
        return repr(self._parts.model)

    @property
    def hosted_tool_search(self) -> bool:
        """Whether the model searches ``ModelRequest.deferred`` tools on its side."""
        return supports_native_tool_search(self._parts.model)

    @property
    def hosted_programmatic_calls(self) -> bool:
        """Whether the model calls ``ModelRequest.programmatic`` tools from code its
        provider runs (the calls come back as the model's own)."""
        return supports_programmatic_calls(self._parts.model)

    # ---------------------------------------------------------------- doing things
    def emit(self, event: ev.Event) -> None:
        """Send an event to the runtime's listeners and to every plugin's ``greenroom_event``.
        A plain hook runs in a worker thread: its events are handed to the event loop."""
        if self.closed:  # a hook that outlived the run (timed out in its thread): the trace ended
            return
        if threading.get_ident() != self._loop_thread:
            from anyio.from_thread import run_sync

            try:
                run_sync(self._parts.events.emit, event)
                return
            except RuntimeError:  # a thread anyio did not start: emit where we are
                pass
        self._parts.events.emit(event)

    async def search(
        self, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> tuple[list[ScoredTool], list[Ranking]]:
        """Rank candidates through the search hooks (keyword fallback when no ranker)."""
        return await search_tools(self._parts.host, query, candidates, self)

    async def call_tool(self, name: str, arguments: object = None) -> ToolResult:
        """Call a tool this run may call, by name, exactly as a call of the model would go
        (``greenroom.run.calls``): resolve, its group loaded, validation, the gates, the tool
        within its timeout, AfterToolExecute, the result masked and bounded, the call
        counted in ``usage`` (and so in priors), its events (``tool_result`` with the tool's
        name) under a fresh call id. Whatever goes wrong is the error result a model would
        read, never an exception: a hidden tool is as unknown here as anywhere, and
        ``arguments`` that are not an object (None is ``{}``) are refused as a model's
        malformed ones are. For a plugin's tool that calls tools itself (a script's calls)."""
        from greenroom.run.calls import ToolCalls  # calls reads this module: loaded on the first call

        call_id = f"call_{uuid.uuid4().hex[:12]}"
        if arguments is None or isinstance(arguments, Mapping):
            call = ToolCall(call_id, name, dict(arguments or {}))
        else:
            call = ToolCall(call_id, name, None, json_text(arguments))
        with activate(self):
            return await ToolCalls(self._parts, self._scoping).run_call(self, within_bounds(call))

    def call_hook(self, hook_name: str, **kwargs: Any) -> list[Any]:
        """Call a contribution hook (every implementation, in pluggy's order) and return
        the non-None answers; a plugin calls the hooks it declared this way."""
        return [r for r in self._parts.host.call_sync(hook_name, **kwargs) if r is not None]

    def on_close(self, closer: Callable[[], Any]) -> None:
        """Run ``closer`` (sync or async) when the runtime closes."""
        self._parts.on_close(closer)

    def config_dir(self, key: str) -> Path | None:
        """The folder relative paths at the dotted config ``key`` resolve against (that of
        the file that set it); None for a runtime built in Python, not from a file."""
        cfg = self._parts.config
        return None if cfg is None else cfg.dir_of(key)


async def search_tools(
    host: PluginHost, query: SearchQuery, candidates: Sequence[ToolDescriptor], ctx: RunContext | None = None
) -> tuple[list[ScoredTool], list[Ranking]]:
    """Rank ``candidates`` through the search hooks (the keyword fallback when no plugin
    ranks); with a run, a tool it may not use is never among the results."""
    rankings = [
        r for r in await host.call("greenroom_rank_tools", ctx=ctx, query=query, candidates=candidates) if r is not None
    ]
    fused = await host.call_first(
        "greenroom_search_tools", ctx=ctx, query=query, candidates=candidates, rankings=rankings
    )
    if fused is None:
        fused = (
            list(rankings[0].results[: query.max_results]) if len(rankings) == 1 else keyword_search(query, candidates)
        )
    if ctx is not None and ctx.hidden:  # whatever the candidates were, a hidden tool is never found
        hidden = ctx.hidden
        fused = [s for s in fused if s.name not in hidden]
    return list(fused)[: query.max_results], rankings


_current: ContextVar[RunContext | None] = ContextVar("greenroom_current_run", default=None)


def current_run() -> RunContext | None:
    """The run whose phase is executing in this task (and the tasks it started), if any:
    the run an event emitted here belongs to."""
    return _current.get()


class activate:
    """Make ``ctx`` the current run for the duration (a plain class, not a generator: a
    step enters several of these)."""

    __slots__ = ("_ctx", "_token")

    def __init__(self, ctx: RunContext) -> None:
        self._ctx = ctx

    def __enter__(self) -> RunContext:
        self._token = _current.set(self._ctx)
        return self._ctx

    def __exit__(self, *exc: object) -> None:
        _current.reset(self._token)
