"""One client of the gateway as one greenroom run: its session, its view, its calls.

A client session is a run that lasts as long as the client stays connected. RunStart
when it starts, the run's scope, then BeforeInference on a request draft gives what the
client sees (the draft's tools and system text); each call the client makes is one step:
AfterInference with that call, the call through greenroom's call path, then the next
step's BeforeInference (whose tools may differ: a strategy that adds found tools).
RunEnd when the client leaves, so what the plugins learn from its calls is kept.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from greenroom import events as ev
from greenroom.config import AgentConfig
from greenroom.models import Message, ModelResponse, RequestDraft, SystemSection, ToolCall
from greenroom.run.calls import ToolCalls
from greenroom.run.context import RunContext, RunOutcome
from greenroom.run.scope import keep_in_scope
from greenroom.tools import ToolDescriptor, ToolResult

if TYPE_CHECKING:
    from greenroom.runtime import Runtime


@attrs.frozen
class ClientView:
    """What a client is offered on a step: the tools, and the system text beside them."""

    tools: tuple[ToolDescriptor, ...]
    instructions: str

    def tool_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.tools)


class _ClientContext(RunContext):
    """A run context whose agent id may name the client (``--per-client``)."""

    def __init__(self, runtime: Runtime, agent: AgentConfig, **kw: Any) -> None:
        super().__init__(runtime, **kw)
        self._agent = agent

    @property
    def agent(self) -> AgentConfig:
        return self._agent


def agent_for(runtime: Runtime, client_name: str | None) -> AgentConfig:
    """The runtime's agent, or one whose id adds the client's name (priors per client)."""
    if not client_name:
        return runtime.agent
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in client_name.strip())[:64] or "client"
    return attrs.evolve(runtime.agent, id=f"{runtime.agent.id}.{safe}")


class ClientRun:
    """The run of one connected client. ``start`` before anything, ``end`` once."""

    def __init__(self, runtime: Runtime, calls: ToolCalls, *, client_name: str | None = None) -> None:
        self._rt = runtime
        self._calls = calls
        self.client_name = client_name
        self.session = runtime.session()
        agent = agent_for(runtime, client_name) if client_name else runtime.agent
        self.ctx = _ClientContext(runtime, agent, session=self.session, run_id=uuid.uuid4().hex[:12], user_input="")
        self.view = ClientView((), "")
        self.calls_made = 0
        self._lock = anyio.Lock()  # the phases of one client's steps never interleave
        self._start_lock = anyio.Lock()
        self._started = False
        self._ended = False

    async def ready(self) -> None:
        """Start the run unless it started already (the client's requests may race)."""
        async with self._start_lock:
            if not self._started:
                await self.start()
                self._started = True

    async def start(self) -> ClientView:
        rt, ctx = self._rt, self.ctx
        self.session.runs += 1
        rt.events.emit(ev.RunStarted(run_id=ctx.run_id, session_id=self.session.id, agent_id=ctx.agent.id, input=""))
        async with self._lock:
            await rt.host.call("greenroom_run_start", ctx=ctx)
            await rt.scoping.scope(ctx)
            self.view = await self._step()
        return self.view

    async def _step(self) -> ClientView:
        """The next step's request, as far as a client sees it: tools and system text."""
        ctx = self.ctx
        ctx.step += 1
        # the client holds the conversation, not greenroom: the draft carries no messages
        draft = RequestDraft(
            system=[SystemSection("agent", "")], tools=ctx.visible_descriptors(), messages=[], step=ctx.step
        )
        await self._rt.host.call("greenroom_before_inference", ctx=ctx, request=draft)
        keep_in_scope(ctx, draft)
        text = "\n\n".join(s.text for s in draft.system if s.text.strip())
        return ClientView(tuple(draft.tools), text)

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[ToolResult, bool]:
        """Run one call the client made; returns its result and whether the view changed."""
        rt, ctx = self._rt, self.ctx
        call = ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=name, arguments=dict(arguments or {}))
        async with self._lock:
            step = ctx.step
            response = ModelResponse(message=Message(role="assistant", content="", tool_calls=(call,)))
            await rt.host.call("greenroom_after_inference", ctx=ctx, response=response)
        result = await self._calls.run_call(ctx, call)
        self.calls_made += 1
        # a step counts once the client acted on it: a client that only looked teaches nothing
        ctx.usage.steps = max(ctx.usage.steps, step)
        async with self._lock:
            if ctx.step != step:  # another call of this client moved the step on already
                return result, False
            before = self.view
            self.view = await self._step()
        return result, self.view.tool_names() != before.tool_names() or self.view.instructions != before.instructions

    async def end(self, *, cancelled: bool = False) -> None:
        """RunEnd for every plugin (once), then the trace's last event for this client."""
        if self._ended:
            return
        self._ended = True
        rt, ctx = self._rt, self.ctx
        outcome = RunOutcome(ctx.run_id, "", ctx.step, "cancelled" if cancelled else "final", ctx.usage_total)
        with anyio.CancelScope(shield=True):
            await rt.finish(ctx, outcome)


__all__ = ["ClientRun", "ClientView", "agent_for"]
