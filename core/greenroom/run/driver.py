"""``Run``: the one object that drives a run's phases, in order, for whoever holds it.

::

    start()             RunStarted; RunStart; the run's scope ([tools.policy], hidden tools)
      next_request()    one step: BeforeInference, the scope kept, the stable-section watch,
                        RequestSent
      take_response()   a model's turn: bounded, counted, kept in the session,
                        ResponseReceived, AfterInference
      take_client_call()  a client's turn (an MCP client of ``greenroom serve``): ClientCalled;
                        no AfterInference, since no model answered
      call_tools() / call_tool()   the turn's calls (``greenroom.run.calls``)
    end(outcome)        RunEnd for every plugin, the session's snapshot, RunFinished

``drive(model)`` is the agent loop over these (``drive(model, on_text=...)`` streams the
model's text to a listener as it arrives, ``greenroom.run.streaming``); ``Runtime.run`` is
``drive``, ``Runtime.stream`` reads it as it happens, the preview is ``start`` and
``next_request``, and each MCP client of ``greenroom serve`` holds a ``Run`` of kind
``CLIENT`` (``Runtime.start_run(kind=RunKind.CLIENT, restrict=...)``). Nothing else calls
the phase hooks. A hook of a phase that every plugin must see (RunStart, BeforeInference,
AfterInference, RunEnd) reaches every implementation even when one fails; the first
failure then ends the run, the others are ``PluginError`` events.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import anyio

from greenroom import events as ev
from greenroom._support.arguments import bounded_response
from greenroom.config import AgentConfig
from greenroom.failures import PluginHookError, RunFailure, first_error
from greenroom.models import (
    Message,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    RequestDraft,
    SystemSection,
    TextListener,
    ToolCall,
)
from greenroom.run.calls import answer_open_calls
from greenroom.run.context import RunContext, RunKind, RunOutcome, activate
from greenroom.run.limits import check_input
from greenroom.run.scope import RunFilter, Scoping, keep_in_scope
from greenroom.run.stable import watch_stable
from greenroom.run.streaming import respond
from greenroom.run.views import Catalog
from greenroom.tools import ToolResult
from greenroom.tools.base import Progress, progress_listener

if TYPE_CHECKING:
    from greenroom.run.calls import ToolCalls
    from greenroom.run.parts import Parts
    from greenroom.run.session import Session

log = logging.getLogger("greenroom")


class RunEnded(RuntimeError):
    """A phase was asked of a run that has ended."""


class RunNotStarted(RuntimeError):
    """A step was asked of a run that has not started: without its scope, nothing runs."""


class EmptyReply(ModelError):
    """The model's reply had neither text nor tool calls: no answer to give, nothing to do.
    It ends the run with stop reason ``error`` rather than as an empty final answer."""

    @classmethod
    def of(cls, response: ModelResponse) -> EmptyReply:
        why = f" (stop reason {response.stop_reason!r})" if response.stop_reason else ""
        return cls(f"the model's reply was empty: no text and no tool calls{why}")


class Run:
    """One run of a runtime, stepped through by its caller.

    ``ctx`` is what plugins see of it. ``start`` before anything; ``end`` once, whatever
    happened (``drive`` and ``async with`` do both). The kind says who takes the turns:
    a model (``AGENT``), an MCP client (``CLIENT``), or nobody (``PREVIEW``).
    """

    def __init__(
        self,
        parts: Parts,
        scoping: Scoping,
        tool_calls: ToolCalls,
        session: Session,
        user_input: str = "",
        *,
        kind: RunKind = RunKind.AGENT,
        agent: AgentConfig | None = None,
        run_id: str | None = None,
        restrict: RunFilter | None = None,
    ) -> None:
        self.parts = parts
        self._scoping = scoping
        self._tool_calls = tool_calls
        self.session = session
        self.kind = kind
        self.ctx = RunContext(
            parts, scoping, session, run_id or uuid.uuid4().hex[:12], user_input, agent=agent or parts.agent, kind=kind
        )
        self.restrict = restrict
        """What this run may not use beside the policy (an MCP client's view: the tools its
        caller's scopes do not reach); applied wherever the policy is."""
        if restrict is not None:
            scoping.restrict(self.ctx, restrict)  # before the run starts: its scope is worked out with it
        # a client brings its own system prompt: it is offered only what plugins add
        prompt = "" if kind is RunKind.CLIENT else self.ctx.agent.system_prompt
        self._system = [SystemSection("agent", prompt)]
        self.started = False
        self._start_error: BaseException | None = None
        self._announced = False
        self.outcome: RunOutcome | None = None

    @property
    def ended(self) -> bool:
        return self.outcome is not None

    @property
    def announced(self) -> bool:
        """The run has begun (its ``run_start`` event is out): it must be ended."""
        return self._announced

    def _active(self, *, starting: bool = False) -> activate:
        """This run is the one events are delivered for, in this task and the tasks it
        starts. A step needs a run that started (its scope known) and has not ended."""
        if self.outcome is not None and self.kind is not RunKind.PREVIEW:
            raise RunEnded(f"run {self.ctx.run_id} has ended ({self.outcome.stop_reason})")
        if not starting and not self.started:
            raise RunNotStarted(f"run {self.ctx.run_id} has not started: await run.start() first")
        return activate(self.ctx)

    # ---------------------------------------------------------------- the phases
    async def start(self) -> None:
        """RunStart for every plugin, then the run's scope (fail closed: nothing runs without it)."""
        if self.started:
            return
        if self._start_error is not None:  # a run whose start failed never runs unscoped
            raise self._start_error
        with self._active(starting=True):
            self._announce()
            try:
                await self._every("greenroom_run_start", ctx=self.ctx)
                await self._scoping.scope(self.ctx)
            except BaseException as exc:
                self._start_error = exc
                raise
        self.started = True

    def _announce(self) -> None:
        """The run counts in its session and its first event goes out (once)."""
        if self._announced:
            return
        self._announced = True
        ctx = self.ctx
        if self.kind is not RunKind.PREVIEW:
            self.session.runs += 1
        ctx.emit(
            ev.RunStarted(
                run_id=ctx.run_id,
                session_id=self.session.id,
                agent_id=ctx.agent.id,
                input=ctx.input,
                run_kind=self.kind.value,
            )
        )

    async def catalog(self) -> Catalog:
        """Every tool the run may use now (``RunContext.catalog``), once what other runs
        loaded and what sources listed again since it last looked is judged: for who
        offers the run's tools without taking a step (``greenroom serve``'s skills)."""
        with self._active():
            await self._scoping.catch_up(self.ctx)
        return self.ctx.catalog()

    async def next_request(self) -> ModelRequest:
        """The next step's request, shaped by BeforeInference and kept within the scope."""
        ctx = self.ctx
        with self._active():
            await self._scoping.catch_up(ctx)  # what other runs loaded, judged before it is offered
            ctx.step += 1
            if self.kind is RunKind.AGENT:
                ctx.usage.steps = ctx.step
            # a client holds its own conversation: its requests carry no messages
            messages = [] if self.kind is RunKind.CLIENT else list(self.session.messages)
            draft = RequestDraft(system=list(self._system), tools=ctx.visible_tools(), messages=messages, step=ctx.step)
            await self._every("greenroom_before_inference", ctx=ctx, request=draft)
            keep_in_scope(ctx, draft)
            watch_stable(ctx, self.session, draft)
            request = draft.freeze()
            ctx.emit(self.parts.describe_request(request))
            return request

    async def take_response(self, response: ModelResponse) -> ModelResponse:
        """A model's turn: its response, bounded, counted and kept, then AfterInference.
        Returns the response as the run keeps it (arguments nested too deeply stay text)."""
        ctx = self.ctx
        with self._active():
            response = bounded_response(response)
            ctx.usage_total = ctx.usage_total + response.usage
            self.session.messages.append(response.message)
            ctx.emit(
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
            await self._every("greenroom_after_inference", ctx=ctx, response=response)
            return response

    def take_client_call(self, name: str, arguments: Mapping[str, Any] | None) -> ToolCall:
        """A client's turn: the call it made, as a ``ToolCall`` of this step. No model
        answered, so no AfterInference; the step counts as used (priors learn from it)."""
        ctx = self.ctx
        with self._active():
            call = ToolCall(id=f"call_{uuid.uuid4().hex[:12]}", name=name, arguments=dict(arguments or {}))
            ctx.usage.steps = max(ctx.usage.steps, ctx.step)
            ctx.emit(ev.ClientCalled(step=ctx.step, call_id=call.id, tool=name))
            return call

    async def call_tools(self, calls: Sequence[ToolCall]) -> list[Message]:
        """A turn's tool calls, concurrently; their results join the session in call order."""
        with self._active():
            results = await self._tool_calls.run_turn(self.ctx, calls)
            self.session.messages.extend(results)
            return results

    async def call_tool(self, call: ToolCall, *, progress: Progress | None = None) -> ToolResult:
        """One call through every phase, to its result as the tool gave it (a client's
        call); what the tool reports of its progress (an MCP server's notifications) goes
        to ``progress(done, total, message)``, awaited in this task's loop."""
        with self._active():
            if progress is None:
                return await self._tool_calls.run_call(self.ctx, call)
            heard = progress_listener.set(progress)
            try:
                return await self._tool_calls.run_call(self.ctx, call)
            finally:
                progress_listener.reset(heard)

    async def end(self, outcome: RunOutcome) -> RunOutcome:
        """RunEnd for every plugin (one failing or hanging does not stop the others), the
        session's snapshot, then the trace's last event. Once: a second call returns the
        first outcome."""
        if self.outcome is not None:
            return self.outcome
        self.outcome = outcome
        ctx = self.ctx
        with activate(ctx), anyio.CancelScope(shield=True):
            try:
                _, failures = await self.parts.host.call_each("greenroom_run_end", ctx=ctx, outcome=outcome)
                for failure in failures:
                    log.debug("%s", failure, exc_info=failure.error)
                    ctx.emit(ev.PluginError.of(failure, ctx.step))
            finally:
                self.session.last_snapshot = self.session.snapshot(ctx)
                ctx.emit(
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
                ctx.closed = True  # the trace ends here, whatever a hook left running says later
        return outcome

    def outcome_of(self, stop_reason: Any, text: str = "") -> RunOutcome:
        ctx = self.ctx
        return RunOutcome(ctx.run_id, text, ctx.step, stop_reason, ctx.usage_total)

    async def fail(self, exc: BaseException) -> tuple[RunOutcome, BaseException]:
        """End the run with stop reason ``error`` for what was raised; returns the outcome
        and the exception a caller should see (the first of a task group's)."""
        error = first_error(exc)
        if isinstance(error, PluginHookError):
            log.debug("%s", error, exc_info=error.error)
            with activate(self.ctx):  # observers get it with its run
                self.ctx.emit(ev.PluginError.of(error, self.ctx.step))
        answer_open_calls(self.session.messages, "was not run: the run ended with an error")
        ctx = self.ctx
        outcome = RunOutcome(
            ctx.run_id, "", ctx.step, "error", ctx.usage_total, error=str(error), failure=RunFailure.of(error)
        )
        return await self.end(outcome), error

    async def cancel(self) -> RunOutcome:
        """End the run as cancelled (the open calls answered, so the session stays valid)."""
        answer_open_calls(self.session.messages, "cancelled before it finished")
        return await self.end(self.outcome_of("cancelled"))

    # ---------------------------------------------------------------- the agent loop
    async def drive(self, model: Model, *, on_text: TextListener | None = None) -> RunOutcome:
        """Drive the run to an outcome with ``model`` answering. RunEnd runs and
        ``run_end`` ends the trace whatever ends the run; a phase hook's failure, a model
        error or any other exception is raised after that (the exception itself, never a
        task group).

        With ``on_text``, a model that streams (``StreamingModel``) is asked to: each piece
        of its text goes to ``on_text`` as it arrives, and the run takes the complete
        response the stream ends with, exactly as it takes ``complete``'s."""
        try:
            with self._active(starting=True):
                self._announce()
                # an input no model would take ends the run before anything is sent, and
                # stays out of the session (resuming it would send it again)
                check_input(self.ctx.input, self.ctx.agent.max_input_tokens)
                self.session.messages.append(Message(role="user", content=self.ctx.input))
            await self.start()
            outcome = await self._loop(model, on_text)
        except anyio.get_cancelled_exc_class():
            await self.cancel()
            raise
        except BaseException as exc:  # KeyboardInterrupt and SystemExit too: RunEnd still runs
            _, error = await self.fail(exc)
            if error is exc:
                raise
            raise error from None
        return await self.end(outcome)

    async def _loop(self, model: Model, on_text: TextListener | None) -> RunOutcome:
        ctx = self.ctx
        while ctx.step < ctx.agent.max_steps:
            request = await self.next_request()
            with self._active():  # what the model's stream hands on belongs to this run
                answer = await respond(model, request, on_text)
            response = await self.take_response(answer)
            if not response.tool_calls:
                if not response.message.content.strip():
                    raise EmptyReply.of(response)
                return self.outcome_of("final", response.message.content)
            await self.call_tools(response.tool_calls)
        return self.outcome_of("max_steps")

    # ---------------------------------------------------------------- hooks every plugin sees
    async def _every(self, hook: str, **kwargs: Any) -> None:
        """Call every implementation; raise the first failure once all have run, after
        reporting the others as ``PluginError`` events."""
        _, failures = await self.parts.host.call_each(hook, **kwargs)
        if not failures:
            return
        for failure in failures[1:]:
            log.debug("%s", failure, exc_info=failure.error)
            self.ctx.emit(ev.PluginError.of(failure, self.ctx.step))
        raise failures[0]


__all__ = ["EmptyReply", "Run", "RunEnded", "RunNotStarted"]
