"""The run loop: sessions, runs, steps and the phases plugins hook into.

::

    RunStart -> hidden tools
      repeat up to max_steps:
        BeforeInference -> model.complete -> AfterInference
        per tool call, concurrently: resolve -> validate -> BeforeToolExecute
                                     -> execute (timeout) -> AfterToolExecute
    RunEnd

Model mistakes (unknown tool, malformed JSON, invalid arguments) and tool failures
(exceptions, timeouts) become error results the model reads; they never end the run.
"""

from __future__ import annotations

import difflib
import json
import logging
import time
import uuid
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from greenroom import events as ev
from greenroom.accounting import RequestAccounting
from greenroom.config import AgentConfig
from greenroom.context import RunContext, RunOutcome
from greenroom.host import PluginHookError, PluginHost
from greenroom.models import (
    Message,
    Model,
    ModelError,
    ModelRequest,
    RequestDraft,
    SystemSection,
    ToolCall,
    supports_native_tool_search,
)
from greenroom.search import Ranking, ScoredTool, SearchQuery, keyword_search
from greenroom.session import Session, SessionError
from greenroom.state import (
    Scope,
    StateRegistry,
    StateStore,
    register_core_state,
)
from greenroom.tools import Tool, ToolCallContext, ToolDescriptor, ToolResult
from greenroom.tools.groups import ToolGroup
from greenroom.tools.toolset import DuplicateToolError, ToolSet, invalid_arguments_message, validation_problems

log = logging.getLogger("greenroom")


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
    ) -> None:
        self.agent = agent or AgentConfig()
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
        self.tools = ToolSet(tools)
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
        self.profile_state = StateStore(self.registry, Scope.PROFILE)
        self.accounting = RequestAccounting()
        self._closers: list[Any] = []
        self.config: Any = None  # the RuntimeConfig when built from a file

    async def preview(self, session: Session | None = None) -> ModelRequest:
        """The request the model would get on the first step, without calling it."""
        session = session or self.session()
        ctx = RunContext(self, session, "preview", "")
        ctx.step = 1
        await self.host.call("greenroom_run_start", ctx=ctx)
        await self._hide(ctx)
        draft = RequestDraft(
            system=[SystemSection("agent", self.agent.system_prompt)],
            tools=ctx.visible_descriptors(),
            messages=list(session.messages),
            step=1,
        )
        await self.host.call("greenroom_before_inference", ctx=ctx, request=draft)
        return draft.freeze()

    async def _hide(self, ctx: RunContext) -> None:
        hidden: set[str] = set()
        if self.host.has_impls("greenroom_hidden_tools"):
            for names in await self.host.call("greenroom_hidden_tools", ctx=ctx, tools=self.tools.descriptors()):
                hidden.update(names or ())
        ctx.hidden = frozenset(hidden)

    # -- sessions -------------------------------------------------------------------
    def session(self, session_id: str | None = None) -> Session:
        return Session(self, session_id)

    def load_session(self, path: str | Path) -> Session:
        p = Path(path)
        try:
            data = json.loads(p.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise SessionError(f"{p}: no such session file") from None
        except json.JSONDecodeError as exc:
            raise SessionError(f"{p}: not valid JSON ({exc})") from None
        return Session.from_json(self, data, str(p))

    def on_close(self, closer: Any) -> None:
        self._closers.append(closer)

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
        return list(fused)[: query.max_results], rankings

    # -- the loop ---------------------------------------------------------------------
    async def run(self, session: Session, user_input: str) -> RunOutcome:
        run_id = uuid.uuid4().hex[:12]
        ctx = RunContext(self, session, run_id, user_input)
        session.runs += 1
        session.messages.append(Message(role="user", content=user_input))
        self.events.emit(ev.RunStarted(run_id=run_id, session_id=session.id, agent_id=self.agent.id, input=user_input))
        outcome: RunOutcome | None = None
        try:
            outcome = await self._loop(ctx)
        except anyio.get_cancelled_exc_class():
            _answer_open_calls(session.messages, "cancelled before it finished")
            outcome = RunOutcome(run_id, "", ctx.step, "cancelled", ctx.usage_total)
            with anyio.CancelScope(shield=True):
                await self._finish(ctx, outcome)
            raise
        except PluginHookError as exc:
            outcome = RunOutcome(run_id, "", ctx.step, "error", ctx.usage_total, error=str(exc))
            self.events.emit(
                ev.PluginError(
                    plugin=exc.plugin,
                    distribution=exc.distribution,
                    hook=exc.hook,
                    message=f"{type(exc.error).__name__}: {exc.error}",
                )
            )
            await self._finish(ctx, outcome)
            raise
        except ModelError as exc:
            # the provider gave up (after its retries): plugins still see the run end, so
            # what the run learned is saved and the trace is complete
            outcome = RunOutcome(run_id, "", ctx.step, "error", ctx.usage_total, error=str(exc))
            await self._finish(ctx, outcome)
            raise
        await self._finish(ctx, outcome)
        return outcome

    async def _finish(self, ctx: RunContext, outcome: RunOutcome) -> None:
        try:
            await self.host.call("greenroom_run_end", ctx=ctx, outcome=outcome)
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
                )
            )

    async def _loop(self, ctx: RunContext) -> RunOutcome:
        await self.host.call("greenroom_run_start", ctx=ctx)
        await self._hide(ctx)
        system = [SystemSection("agent", self.agent.system_prompt)]
        while ctx.step < self.agent.max_steps:
            ctx.step += 1
            ctx.usage.steps = ctx.step
            draft = RequestDraft(
                system=list(system),
                tools=ctx.visible_descriptors(),
                messages=list(ctx._session.messages),
                step=ctx.step,
            )
            await self.host.call("greenroom_before_inference", ctx=ctx, request=draft)
            request = draft.freeze()
            self.events.emit(self.describe_request(request))
            response = await self.model.complete(request)
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
            results = await self._execute_calls(ctx, response.tool_calls)
            ctx._session.messages.extend(results)
        return RunOutcome(ctx.run_id, "", ctx.step, "max_steps", ctx.usage_total)

    async def _execute_calls(self, ctx: RunContext, calls: Sequence[ToolCall]) -> list[Message]:
        results: list[Message | None] = [None] * len(calls)
        limiter = anyio.Semaphore(max(1, self.agent.max_concurrency))

        async def one(i: int, call: ToolCall) -> None:
            async with limiter:
                results[i] = await self._execute_one(ctx, call)

        try:
            async with anyio.create_task_group() as tg:
                for i, call in enumerate(calls):
                    tg.start_soon(one, i, call)
        except anyio.get_cancelled_exc_class():
            # keep what finished before the cancel; run() answers the rest
            ctx._session.messages.extend(r for r in results if r is not None)
            raise
        return [r for r in results if r is not None]

    async def _execute_one(self, ctx: RunContext, call: ToolCall) -> Message:
        requested = call.name
        resolved = await self.host.call_first("greenroom_resolve_tool_call", ctx=ctx, call=call)
        if resolved is not None and resolved != call:
            call = attrs.evolve(resolved, id=call.id)
            self.events.emit(
                ev.ToolCallResolved(step=ctx.step, call_id=call.id, requested=requested, resolved=call.name)
            )
        started = time.perf_counter()
        decided_by: str | None = None
        result = self._precheck(ctx, call)
        if result is None:
            tool = self.tools[call.name]
            decision = await self.host.call_first(
                "greenroom_before_tool_execute", ctx=ctx, call=call, tool=tool.descriptor
            )
            if decision is not None and decision.action == "block":
                decided_by = "gate"
                result = ToolResult.error(f"call to {call.name!r} was blocked: {decision.reason}")
            elif decision is not None and decision.action == "answer":
                decided_by = "gate"
                result = decision.result or ToolResult("")
            else:
                result = await self._run_tool(ctx, tool, call)
        if call.name in self.tools and call.name not in ctx.hidden:
            ctx.usage.record(ctx.step, call.name)
        await self.host.call("greenroom_after_tool_execute", ctx=ctx, call=call, result=result)
        self.events.emit(
            ev.ToolExecuted(
                step=ctx.step,
                call_id=call.id,
                tool=call.name,
                arguments=call.arguments,
                is_error=result.is_error,
                content=result.content,
                duration_ms=(time.perf_counter() - started) * 1000,
                decided_by=decided_by,
            )
        )
        return Message(
            role="tool", content=result.content, tool_call_id=call.id, name=call.name, is_error=result.is_error
        )

    def _precheck(self, ctx: RunContext, call: ToolCall) -> ToolResult | None:
        """Unknown tool, hidden tool, malformed or invalid arguments -> an error result."""
        if call.name not in self.tools or call.name in ctx.hidden:
            return ToolResult.error(self._unknown_tool_message(ctx, call.name))
        if call.arguments is None:
            raw = (call.raw_arguments or "")[:500]
            return ToolResult.error(
                f"the arguments for {call.name!r} are not a JSON object: {raw!r}. "
                "Send the arguments as one JSON object."
            )
        problems = validation_problems(self.tools, call.name, call.arguments)
        if problems:
            return ToolResult.error(invalid_arguments_message(self.tools[call.name].descriptor, problems))
        return None

    def _unknown_tool_message(self, ctx: RunContext, name: str) -> str:
        pool = [d.name for d in ctx.visible_descriptors()]
        close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
        msg = f"there is no tool named {name!r} available to this agent."
        if close:
            msg += f" Did you mean: {', '.join(close)}?"
        if len(pool) <= 30:
            msg += f" Available tools: {', '.join(sorted(pool))}."
        return msg

    async def _run_tool(self, ctx: RunContext, tool: Tool, call: ToolCall) -> ToolResult:
        timeout = tool.timeout if tool.timeout is not None else self.agent.tool_timeout
        tctx = ToolCallContext(
            call_id=call.id,
            run_id=ctx.run_id,
            tool_name=call.name,
            logger=logging.getLogger(f"greenroom.tools.{call.name}"),
            run=ctx if call.name in self.plugin_tool_names else None,
        )
        try:
            with anyio.fail_after(timeout):
                value = await tool.execute(dict(call.arguments or {}), tctx)
        except TimeoutError:
            return ToolResult.error(f"tool {call.name!r} timed out after {timeout:g} s")
        except anyio.get_cancelled_exc_class():
            raise
        except Exception as exc:
            return ToolResult.error(f"tool {call.name!r} failed: {type(exc).__name__}: {exc}")
        return ToolResult.from_value(value)

    def describe_request(self, request: ModelRequest) -> ev.RequestSent:
        """Token counts of the three parts of a request and the cacheable-prefix hash."""
        return self.accounting.describe_request(request, hosted_search=supports_native_tool_search(self.model))


def _answer_open_calls(messages: list[Message], why: str) -> None:
    """Give every tool call of the last assistant turn that has no result an error result,
    so the session stays valid for providers that require each call to be answered."""
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "assistant":
            answered = {m.tool_call_id for m in messages[i + 1 :] if m.role == "tool"}
            for c in messages[i].tool_calls:
                if c.id not in answered:
                    messages.append(
                        Message(
                            role="tool",
                            content=f"tool {c.name!r} {why}",
                            tool_call_id=c.id,
                            name=c.name,
                            is_error=True,
                        )
                    )
            return
