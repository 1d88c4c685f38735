"""One tool call through the phases, and the calls of one model turn run side by side.

::

    resolve -> validate -> BeforeToolExecute (gates) -> execute (timeout) -> AfterToolExecute

Model mistakes (unknown tool, malformed JSON, invalid arguments) and tool failures
(exceptions, timeouts) become error results the model reads. A per-call hook that raises
(resolve, a gate, after-execute, or a search hook a plugin tool reached through
``ctx.search``) fails that call closed: the call is not run or its result is withheld, the
model reads an error result naming the plugin and the hook, a ``PluginError`` event is
emitted, and the run goes on.
"""

from __future__ import annotations

import difflib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import attrs

from greenroom import events as ev
from greenroom.context import RunContext
from greenroom.failures import PluginHookError, first_error
from greenroom.models import Message, ToolCall
from greenroom.tools import Tool, ToolCallContext, ToolResult
from greenroom.tools.toolset import invalid_arguments_message, validation_problems

if TYPE_CHECKING:
    from greenroom.runtime import Runtime

log = logging.getLogger("greenroom")


class ToolCalls:
    """Runs the tool calls a model asked for, for one runtime."""

    def __init__(self, runtime: Runtime) -> None:
        self._rt = runtime

    async def run_turn(self, ctx: RunContext, calls: Sequence[ToolCall]) -> list[Message]:
        """Every call of one turn, concurrently (up to ``max_concurrency``), results in call order."""
        if len(calls) == 1:
            # the common turn: nothing to run beside it, so no task group (a third of a step's overhead)
            return [await self.run_one(ctx, calls[0])]
        results: list[Message | None] = [None] * len(calls)
        limiter = anyio.Semaphore(max(1, self._rt.agent.max_concurrency))

        async def one(i: int, call: ToolCall) -> None:
            async with limiter:
                results[i] = await self.run_one(ctx, call)

        try:
            async with anyio.create_task_group() as tg:
                for i, call in enumerate(calls):
                    tg.start_soon(one, i, call)
        except BaseException as exc:
            # keep what finished (the run answers the rest), and raise what went wrong
            # rather than the task group that carried it
            ctx._session.messages.extend(r for r in results if r is not None)
            error = first_error(exc)
            if error is exc:
                raise
            raise error from None
        return [r for r in results if r is not None]

    async def run_one(self, ctx: RunContext, call: ToolCall) -> Message:
        rt = self._rt
        started = time.perf_counter()
        decided_by: str | None = None
        try:
            call = await self._resolve(ctx, call)
            result, decided_by = await self._decide(ctx, call)
        except PluginHookError as exc:
            result = self._contain(ctx, call, exc, f"call to {call.name!r} was not run")
        if call.name in rt.tools and call.name not in ctx.hidden:
            ctx.usage.record(ctx.step, call.name)
        try:
            await rt.host.call("greenroom_after_tool_execute", ctx=ctx, call=call, result=result)
        except PluginHookError as exc:
            result = self._contain(ctx, call, exc, f"the result of {call.name!r} is withheld")
        rt.events.emit(
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

    async def _resolve(self, ctx: RunContext, call: ToolCall) -> ToolCall:
        resolved = await self._rt.host.call_first("greenroom_resolve_tool_call", ctx=ctx, call=call)
        if resolved is None or resolved == call:
            return call
        resolved = attrs.evolve(resolved, id=call.id)
        self._rt.events.emit(
            ev.ToolCallResolved(step=ctx.step, call_id=call.id, requested=call.name, resolved=resolved.name)
        )
        return resolved

    async def _decide(self, ctx: RunContext, call: ToolCall) -> tuple[ToolResult, str | None]:
        """The result, and ``"gate"`` when a gate blocked or answered the call."""
        problem = self._precheck(ctx, call)
        if problem is not None:
            return problem, None
        tool = self._rt.tools[call.name]
        decision = await self._rt.host.call_first(
            "greenroom_before_tool_execute", ctx=ctx, call=call, tool=tool.descriptor
        )
        if decision is not None and decision.action == "block":
            return ToolResult.error(f"call to {call.name!r} was blocked: {decision.reason}"), "gate"
        if decision is not None and decision.action == "answer":
            return decision.result or ToolResult(""), "gate"
        return await self._execute(ctx, tool, call), None

    def _precheck(self, ctx: RunContext, call: ToolCall) -> ToolResult | None:
        """Unknown tool, hidden tool, malformed or invalid arguments -> an error result."""
        tools = self._rt.tools
        if call.name not in tools or call.name in ctx.hidden:
            return ToolResult.error(_unknown_tool_message(ctx, call.name))
        if call.arguments is None:
            raw = (call.raw_arguments or "")[:500]
            return ToolResult.error(
                f"the arguments for {call.name!r} are not a JSON object: {raw!r}. "
                "Send the arguments as one JSON object."
            )
        problems = validation_problems(tools, call.name, call.arguments)
        if problems:
            return ToolResult.error(invalid_arguments_message(tools[call.name].descriptor, problems))
        return None

    async def _execute(self, ctx: RunContext, tool: Tool, call: ToolCall) -> ToolResult:
        timeout = tool.timeout if tool.timeout is not None else self._rt.agent.tool_timeout
        tctx = ToolCallContext(
            call_id=call.id,
            run_id=ctx.run_id,
            tool_name=call.name,
            logger=logging.getLogger(f"greenroom.tools.{call.name}"),
            run=ctx if call.name in self._rt.plugin_tool_names else None,
        )
        try:
            with anyio.fail_after(timeout):
                value = await tool.execute(dict(call.arguments or {}), tctx)
        except TimeoutError:
            return ToolResult.error(f"tool {call.name!r} timed out after {timeout:g} s")
        except anyio.get_cancelled_exc_class():
            raise
        except PluginHookError as exc:  # a hook the tool reached through ctx.run (a search)
            return self._contain(ctx, call, exc, f"tool {call.name!r} failed")
        except Exception as exc:
            error = first_error(exc)
            return ToolResult.error(f"tool {call.name!r} failed: {type(error).__name__}: {error}")
        return ToolResult.from_value(value)

    def _contain(self, ctx: RunContext, call: ToolCall, exc: PluginHookError, what: str) -> ToolResult:
        """Report a per-call hook's failure and give the model an error result instead."""
        log.debug("%s", exc, exc_info=exc.error)
        self._rt.events.emit(
            ev.PluginError(
                plugin=exc.plugin,
                distribution=exc.distribution,
                hook=exc.hook,
                message=exc.reason,
                step=ctx.step,
                call_id=call.id,
            )
        )
        return ToolResult.error(f"{what}: plugin {exc.plugin!r} failed in {exc.hook}: {exc.reason}")


def _unknown_tool_message(ctx: RunContext, name: str) -> str:
    pool = [d.name for d in ctx.visible_descriptors()]
    close = difflib.get_close_matches(name, pool, n=3, cutoff=0.6)
    msg = f"there is no tool named {name!r} available to this agent."
    if close:
        msg += f" Did you mean: {', '.join(close)}?"
    if len(pool) <= 30:
        msg += f" Available tools: {', '.join(sorted(pool))}."
    return msg


def answer_open_calls(messages: list[Message], why: str) -> None:
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
