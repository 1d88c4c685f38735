"""The run loop: a composed runtime, its runs and steps, and the phases plugins hook into.

::

    RunStart -> the run's scope: [tools.policy], then hidden tools (greenroom.run.policy)
      repeat up to max_steps:
        BeforeInference -> model.complete -> AfterInference
        the turn's tool calls, concurrently (``greenroom.run.calls``)
    RunEnd

Model mistakes and tool failures become error results the model reads, and a per-call
hook's failure fails only its call (``greenroom.run.calls``). A phase hook's failure, a model
error or any other exception ends the run with stop reason ``error``, and so does an
input over ``[agent] max_input_tokens``, before anything is sent (``greenroom.run.limits``);
whatever ends it, RunEnd reaches every plugin and the trace ends with ``run_end``.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio

from greenroom import events as ev
from greenroom._support.arguments import bounded_response
from greenroom.config import AgentConfig
from greenroom.failures import PluginHookError, RunFailure, first_error
from greenroom.models import (
    Message,
    Model,
    ModelRequest,
    RequestDraft,
    SystemSection,
    supports_native_tool_search,
)
from greenroom.plugins.host import PluginHost
from greenroom.run.calls import ToolCalls, answer_open_calls
from greenroom.run.context import RunContext, RunOutcome
from greenroom.run.limits import check_input
from greenroom.run.policy import ToolPolicy
from greenroom.run.scope import Scoping, keep_in_scope
from greenroom.search import Ranking, ScoredTool, SearchQuery, keyword_search
from greenroom.session import Session
from greenroom.state import (
    Scope,
    StateRegistry,
    StateStore,
    register_core_state,
)
from greenroom.tokens.accounting import RequestAccounting
from greenroom.tools import Tool, ToolDescriptor
from greenroom.tools.groups import ToolGroup
from greenroom.tools.schema.problem import SchemaProblem
from greenroom.tools.toolset import DuplicateToolError, ToolSet

log = logging.getLogger("greenroom")

STABLE_RUN = 3
"""Steps in a row a stable system section may change before it is reported."""


# ----------------------------------------------------------------------------- runtime


class Runtime:
    """A composed agent runtime: model, tools, plugins, events."""

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
    ) -> None:
        self.agent = agent or AgentConfig()
        policy = policy or ToolPolicy()
        self.groups: dict[str, ToolGroup] = {}
        for g in groups:
            if g.id in self.groups:
                raise DuplicateToolError(f"two tool groups have the id {g.id!r}; group ids must be unique")
            self.groups[g.id] = g
        self.model = model
        self.host = host
        self.events = events or ev.EventBus()
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
        self.scoping = Scoping(self, policy)
        self.groups_version = 0  # bumped when a group loads, so views of the groups can be reused
        self.profile_state = StateStore(self.registry, Scope.PROFILE)
        self.accounting = RequestAccounting()
        self._closers: list[Any] = []
        self._calls = ToolCalls(self)
        self.config: Any = None  # the RuntimeConfig when built from a file
        self.mcp: Any = None  # the McpToolset of its [[tools.mcp]] servers, when built from a file

    async def preview(self, session: Session | None = None) -> ModelRequest:
        """The request the model would get on the first step, without calling it."""
        session = session or self.session()
        ctx = RunContext(self, session, "preview", "")
        ctx.step = 1
        return await self.preview_in(ctx)

    async def preview_in(self, ctx: RunContext) -> ModelRequest:
        """``preview`` with a context the caller made (to read its scope afterwards)."""
        await self.host.call("greenroom_run_start", ctx=ctx)
        await self.scoping.scope(ctx)
        draft = RequestDraft(
            system=[SystemSection("agent", self.agent.system_prompt)],
            tools=ctx.visible_tools(),
            messages=list(ctx._session.messages),
            step=1,
        )
        await self.host.call("greenroom_before_inference", ctx=ctx, request=draft)
        keep_in_scope(ctx, draft)
        return draft.freeze()

    def universe(self) -> list[ToolDescriptor]:
        """Every tool the runtime knows that a model could use (``Scoping.universe``)."""
        return self.scoping.universe()

    # -- sessions -------------------------------------------------------------------
    def session(self, session_id: str | None = None) -> Session:
        return Session(self, session_id)

    def load_session(self, path: str | Path, *, take_over: bool = False) -> Session:
        """Resume a saved session (``Session.load``: a broken file or another agent's
        session is a ``SessionError`` naming the file, unless ``take_over``)."""
        return Session.load(self, path, take_over=take_over)

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

    async def load_group(self, group_id: str, step: int = 0) -> list[Tool]:
        """Load a group once and make its tools callable; errors propagate to the caller."""
        group = self.groups[group_id]
        first = not group.loaded
        try:
            tools = await group.load()
        except Exception as exc:
            self.events.emit(ev.GroupLoaded(step=step, group=group_id, error=f"{type(exc).__name__}: {exc}"))
            raise
        if first:
            self.groups_version += 1
            for t in tools:
                self.tools.add(t, replace=True)
            self.events.emit(ev.GroupLoaded(step=step, group=group_id, tools=tuple(t.descriptor.name for t in tools)))
        return tools

    # -- search ------------------------------------------------------------------------
    async def search(
        self, query: SearchQuery, candidates: Sequence[ToolDescriptor], ctx: RunContext | None = None
    ) -> tuple[list[ScoredTool], list[Ranking]]:
        rankings = [
            r
            for r in await self.host.call("greenroom_rank_tools", ctx=ctx, query=query, candidates=candidates)
            if r is not None
        ]
        fused = await self.host.call_first(
            "greenroom_search_tools", ctx=ctx, query=query, candidates=candidates, rankings=rankings
        )
        if fused is None:
            if len(rankings) == 1:
                fused = list(rankings[0].results[: query.max_results])
            else:
                fused = keyword_search(query, candidates)
        if ctx is not None and ctx.hidden:  # whatever the candidates were, a hidden tool is never found
            hidden = ctx.hidden
            fused = [s for s in fused if s.name not in hidden]
        return list(fused)[: query.max_results], rankings

    # -- the loop ---------------------------------------------------------------------
    async def run(self, session: Session, user_input: str) -> RunOutcome:
        """Drive one user input to an outcome. RunEnd runs and ``run_end`` ends the trace
        whatever ends the run; a phase hook's failure, a model error or any other
        exception is raised after that (the exception itself, never a task group)."""
        run_id = uuid.uuid4().hex[:12]
        ctx = RunContext(self, session, run_id, user_input)
        session.runs += 1
        self.events.emit(ev.RunStarted(run_id=run_id, session_id=session.id, agent_id=self.agent.id, input=user_input))
        try:
            # an input no model would take ends the run before anything is sent, and stays
            # out of the session (resuming it would send it again)
            check_input(user_input, self.agent.max_input_tokens)
            session.messages.append(Message(role="user", content=user_input))
            outcome = await self._loop(ctx)
        except anyio.get_cancelled_exc_class():
            answer_open_calls(session.messages, "cancelled before it finished")
            with anyio.CancelScope(shield=True):
                await self.finish(ctx, RunOutcome(run_id, "", ctx.step, "cancelled", ctx.usage_total))
            raise
        except Exception as exc:
            error = first_error(exc)
            failure = RunFailure.of(error)
            if isinstance(error, PluginHookError):
                log.debug("%s", error, exc_info=error.error)
                self.events.emit(ev.PluginError.of(error, ctx.step))
            answer_open_calls(session.messages, "was not run: the run ended with an error")
            outcome = RunOutcome(run_id, "", ctx.step, "error", ctx.usage_total, error=str(error), failure=failure)
            await self.finish(ctx, outcome)
            if error is exc:
                raise
            raise error from None
        await self.finish(ctx, outcome)
        return outcome

    async def finish(self, ctx: RunContext, outcome: RunOutcome) -> None:
        """RunEnd for every plugin (one failing does not skip the others), then the trace's
        last event. ``run`` calls it; a host that drives a run of its own (a gateway whose
        client leaves) calls it to end that run."""
        try:
            _, failures = await self.host.call_each("greenroom_run_end", ctx=ctx, outcome=outcome)
            for failure in failures:
                log.debug("%s", failure, exc_info=failure.error)
                self.events.emit(ev.PluginError.of(failure, ctx.step))
        finally:
            ctx._session.last_snapshot = ctx._session.snapshot(ctx)
            self.events.emit(
                ev.RunFinished(
                    run_id=outcome.run_id,
                    steps=outcome.steps,
                    stop_reason=outcome.stop_reason,
                    input_tokens=outcome.usage.input_tokens,
                    output_tokens=outcome.usage.output_tokens,
                    cached_input_tokens=outcome.usage.cached_input_tokens,
                    error=outcome.error,
                    failure=outcome.failure,
                )
            )

    async def _loop(self, ctx: RunContext) -> RunOutcome:
        await self.host.call("greenroom_run_start", ctx=ctx)
        await self.scoping.scope(ctx)
        system = [SystemSection("agent", self.agent.system_prompt)]
        while ctx.step < self.agent.max_steps:
            ctx.step += 1
            ctx.usage.steps = ctx.step
            draft = RequestDraft(
                system=list(system),
                tools=ctx.visible_tools(),
                messages=list(ctx._session.messages),
                step=ctx.step,
            )
            await self.host.call("greenroom_before_inference", ctx=ctx, request=draft)
            keep_in_scope(ctx, draft)
            self._watch_stable(ctx, draft)
            request = draft.freeze()
            self.events.emit(self.describe_request(request))
            # arguments nested too deeply stay text from here on: nothing below recurses into them
            response = bounded_response(await self.model.complete(request))
            ctx.usage_total = ctx.usage_total + response.usage
            ctx._session.messages.append(response.message)
            self.events.emit(
                ev.ResponseReceived(
                    step=ctx.step,
                    input_tokens=response.usage.input_tokens,
                    output_tokens=response.usage.output_tokens,
                    cached_input_tokens=response.usage.cached_input_tokens,
                    cache_write_tokens=response.usage.cache_write_tokens,
                    text=response.message.content,
                    tool_calls=tuple(
                        {
                            "id": c.id,
                            "name": c.name,
                            "arguments": c.arguments if c.arguments is not None else c.raw_arguments,
                        }
                        for c in response.tool_calls
                    ),
                )
            )
            await self.host.call("greenroom_after_inference", ctx=ctx, response=response)
            if not response.tool_calls:
                return RunOutcome(ctx.run_id, response.message.content, ctx.step, "final", ctx.usage_total)
            results = await self._calls.run_turn(ctx, response.tool_calls)
            ctx._session.messages.extend(results)
        return RunOutcome(ctx.run_id, "", ctx.step, "max_steps", ctx.usage_total)

    def _watch_stable(self, ctx: RunContext, draft: RequestDraft) -> None:
        """Say when a section marked stable changes step after step: it silently costs the
        prompt cache otherwise. A section that changes now and then (a listing after a
        discovery) is what stable allows; one that changed on ``STABLE_RUN`` steps in a
        row is reported, once per session and section (an event and a log warning)."""
        seen, streaks = ctx._session.stable_sections, ctx._session.stable_streaks
        for section in draft.system:
            if not section.stable:
                continue
            before = seen.get(section.key)
            seen[section.key] = section.text
            if before is None:
                continue
            streak = streaks.get(section.key, 0)
            if streak < 0:  # reported already
                continue
            streak = streak + 1 if before != section.text else 0
            streaks[section.key] = streak
            if streak >= STABLE_RUN:
                streaks[section.key] = -1
                self.events.emit(ev.StableSectionChanged(step=ctx.step, key=section.key))
                log.warning(
                    "system section %r is marked stable but changed on each of the last %d steps; give a section "
                    "that changes stable=False, or the provider's prompt cache is rebuilt every step",
                    section.key,
                    STABLE_RUN,
                )

    def describe_request(self, request: ModelRequest) -> ev.RequestSent:
        """Token counts of the three parts of a request and the cacheable-prefix hash."""
        return self.accounting.describe_request(request, hosted_search=supports_native_tool_search(self.model))
