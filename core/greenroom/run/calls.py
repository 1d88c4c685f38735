"""One tool call through the phases, and the calls of one model turn run side by side.

::

    resolve -> validate -> BeforeToolExecute (gates) -> execute (timeout) -> AfterToolExecute

Model mistakes (unknown tool, malformed JSON, arguments nested too deeply, invalid
arguments), a tool whose parameter schema is invalid (``greenroom.tools.toolset``) and tool
failures (exceptions, timeouts) become error results the model reads. A per-call hook that raises
(resolve, a gate, after-execute, or a search hook a plugin tool reached through
``ctx.search``) fails that call closed: the call is not run or its result is withheld, the
model reads an error result naming the plugin and the hook, a ``PluginError`` event is
emitted, and the run goes on. Anything else that fails from resolve to the result
(greenroom itself, or a result it cannot render) gives the call an error result and an
``InternalError`` event whose traceback stays in the trace (an event listener that fails,
a trace on a full disk say, still ends the run: what happens could not be recorded).
Every result, whatever produced it, is compacted (``[tools.results]``), then cut to
``[agent] max_result_tokens`` (``greenroom.run.limits``; a plugin may keep the whole and
say how to read it, ``greenroom.results.fitting``), its images and sounds counted against the same limit;
they reach the model on the tool message (``Message.parts``), and events only name them.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
import attrs

from greenroom import events as ev
from greenroom._support.arguments import nested_too_deeply, too_deep_message, within_bounds
from greenroom._support.redact import mask_json
from greenroom.failures import CONTAINED, PluginHookError, first_error
from greenroom.models import Message, ToolCall
from greenroom.results.fitting import compacted, fit
from greenroom.run.context import RunContext
from greenroom.run.limits import bound_parts
from greenroom.tokens.media import media_tokens, model_family
from greenroom.tools import Tool, ToolCallContext, ToolResult
from greenroom.tools.base import MediaPart, progress_listener
from greenroom.tools.toolset import (
    UnusableToolError,
    invalid_arguments_message,
    unusable_message,
    validation_problems,
)

if TYPE_CHECKING:
    from greenroom.run.parts import Parts
    from greenroom.run.scope import Scoping

log = logging.getLogger("greenroom")


@functools.lru_cache(maxsize=4096)
def _tool_logger(name: str) -> logging.Logger:
    # logging keeps every logger for good anyway; this spares each call its lock and lookup
    return logging.getLogger(f"greenroom.tools.{name}")


class ToolCalls:
    """Runs the tool calls of a runtime's runs, reading its parts."""

    def __init__(self, parts: Parts, scoping: Scoping) -> None:
        self._rt = parts
        self._scoping = scoping

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
        call, result = await self._run(ctx, call)
        return Message(
            role="tool",
            content=result.content,
            tool_call_id=call.id,
            name=call.name,
            is_error=result.is_error,
            parts=result.parts,
        )

    async def run_call(self, ctx: RunContext, call: ToolCall) -> ToolResult:
        """One call through every phase, to its result as the tool gave it (for an MCP client's call)."""
        return (await self._run(ctx, call))[1]

    async def _run(self, ctx: RunContext, call: ToolCall) -> tuple[ToolCall, ToolResult]:
        """The call as resolved, and its result. AfterToolExecute runs only for a call
        BeforeToolExecute saw; a call refused before it is a ``ToolCallRejected`` event."""
        rt = self._rt
        started = time.perf_counter()
        decided_by: str | None = None
        gated = False
        rejected: ev.Rejection | None = None
        try:
            await self._scoping.catch_up(ctx)  # groups other runs loaded: judged before anything of them runs
            call = await self._resolve(ctx, call)
            await self._load_group_of(ctx, call.name)
            problem = self._precheck(ctx, call)
            if problem is not None:
                result, rejected = problem
            else:
                gated = True
                result, decided_by = await self._decide(ctx, call)
        except PluginHookError as exc:
            result = self._contain(ctx, call, [exc], f"call to {call.name!r} was not run")
            rejected = None if gated else ev.Rejection.PLUGIN_FAILED
        except Exception as exc:  # not the model's, not a tool's, not a plugin's: greenroom's own
            result = self._internal_error(ctx, call, exc)
            rejected = None if gated else ev.Rejection.INTERNAL_ERROR
        if result.parts:
            await self._estimate(result.parts)
        result = await self._bound(ctx, call, result)
        if call.name in rt.tools and call.name not in ctx.hidden:
            ctx.usage.record(ctx.step, call.name)
        if rejected is not None:
            ctx.emit(ev.ToolCallRejected(step=ctx.step, call_id=call.id, tool=call.name, reason=rejected.value))
        else:
            # every plugin sees the call, even when one of them fails: an audit loses nothing
            _, failures = await rt.host.call_each("greenroom_after_tool_execute", ctx=ctx, call=call, result=result)
            if failures:
                result = self._masked(self._contain(ctx, call, failures, f"the result of {call.name!r} is withheld"))
        ctx.emit(
            ev.ToolExecuted(
                step=ctx.step,
                call_id=call.id,
                tool=call.name,
                arguments=call.arguments,
                is_error=result.is_error,
                content=result.content,
                duration_ms=(time.perf_counter() - started) * 1000,
                decided_by=decided_by,
                parts=tuple({"kind": p.kind, "mime_type": p.mime_type, "bytes": p.size} for p in result.parts),
            )
        )
        return call, result

    async def _resolve(self, ctx: RunContext, call: ToolCall) -> ToolCall:
        resolved = await self._rt.host.call("greenroom_resolve_tool_call", ctx=ctx, call=call)
        if resolved is None or resolved == call:
            return call
        # a hook's call is bounded like the model's: its arguments reach events and the session
        resolved = attrs.evolve(within_bounds(resolved), id=call.id)
        ctx.emit(ev.ToolCallResolved(step=ctx.step, call_id=call.id, requested=call.name, resolved=resolved.name))
        return resolved

    async def _load_group_of(self, ctx: RunContext, name: str) -> None:
        """A call of a tool whose group is not loaded yet loads the group: the model knew
        the name from a listing or a search (or it has the prefix of a server that never
        listed its tools here). A load that fails (or outlasts the tool timeout) leaves the
        call to the unknown-tool error, which then says why the group failed; a later call
        tries again.
        A tool whose catalog schema is already known to be unusable loads nothing: that
        problem is the call's answer."""
        if name in ctx.tools or name in ctx.hidden or self._rt.tools.problem(name) is not None:
            return
        group = ctx.group_of(name)
        group_id = group.id if group is not None else self._unlisted_group_of(ctx, name)
        if group_id is None:
            return
        try:
            with anyio.fail_after(self._rt.agent.tool_timeout):
                await ctx.load_group(group_id)
        except anyio.get_cancelled_exc_class():
            raise
        except PluginHookError as exc:  # judging what it brought failed: those tools stay hidden
            log.debug("%s", exc, exc_info=exc.error)
            ctx.emit(ev.PluginError.of(exc, ctx.step))
        except Exception as exc:
            log.debug("loading group %s for a call of %s failed: %s", group_id, name, exc)

    def _unlisted_group_of(self, ctx: RunContext, name: str) -> str | None:
        """The not yet loaded group whose names all start like ``name`` (an MCP server
        with prefixed names that has never listed its tools here): loading it is how the
        call finds the tool, or the reason the server cannot give it."""
        for group_id in ctx.groups:
            group = self._rt.groups.get(group_id)
            # only a group that has named no tools: a listed one says what it has, and a
            # name it does not list (a typo, a hidden tool's) starts nothing
            if group is None or group.loaded or group.tool_names or not group.prefix:
                continue
            if name.startswith(group.prefix):
                return group_id
        return None

    async def _decide(self, ctx: RunContext, call: ToolCall) -> tuple[ToolResult, str | None]:
        """The result of a call that passed the checks, and ``"gate"`` when a gate blocked
        or answered it."""
        tool = self._rt.tools[call.name]
        decision = await self._rt.host.call("greenroom_before_tool_execute", ctx=ctx, call=call, tool=tool.descriptor)
        if decision is not None and decision.action == "block":
            return ToolResult.error(f"call to {call.name!r} was blocked: {decision.reason}"), "gate"
        if decision is not None and decision.action == "answer":
            return decision.result or ToolResult(""), "gate"
        return await self._execute(ctx, tool, call), None

    def _precheck(self, ctx: RunContext, call: ToolCall) -> tuple[ToolResult, ev.Rejection] | None:
        """Unknown or hidden tool, a tool whose schema is invalid, malformed, too deeply
        nested or invalid arguments -> an error result, and why the call is refused."""
        tools = self._rt.tools
        unusable = tools.problem(call.name)  # known even before its group loads
        if unusable is not None and call.name not in ctx.hidden:
            return ToolResult.error(unusable_message(call.name, unusable)), ev.Rejection.UNUSABLE_TOOL
        if call.name not in tools or call.name in ctx.hidden:
            return ToolResult.error(_unknown_tool_message(ctx, call.name)), ev.Rejection.UNKNOWN_TOOL
        if nested_too_deeply(call):
            return ToolResult.error(too_deep_message(call.name)), ev.Rejection.MALFORMED_ARGUMENTS
        if call.arguments is None:
            raw = (call.raw_arguments or "")[:500]
            message = f"the arguments for {call.name!r} are not a JSON object: {raw!r}. "
            message += "Send the arguments as one JSON object."
            return ToolResult.error(message), ev.Rejection.MALFORMED_ARGUMENTS
        try:
            problems = validation_problems(tools, call.name, call.arguments)
        except UnusableToolError as exc:  # found only now: by the meta-schema, or validation raised
            return ToolResult.error(str(exc)), ev.Rejection.UNUSABLE_TOOL
        if problems:
            message = invalid_arguments_message(tools[call.name].descriptor, problems)
            return ToolResult.error(message), ev.Rejection.INVALID_ARGUMENTS
        return None

    async def _execute(self, ctx: RunContext, tool: Tool, call: ToolCall) -> ToolResult:
        timeout = tool.timeout if tool.timeout is not None else self._rt.agent.tool_timeout
        tctx = ToolCallContext(
            call_id=call.id,
            run_id=ctx.run_id,
            tool_name=call.name,
            logger=_tool_logger(call.name),
            run=ctx if call.name in self._rt.plugin_tool_names else None,
            progress=progress_listener.get(),
        )
        try:
            with anyio.fail_after(timeout):
                value = await tool.execute(dict(call.arguments or {}), tctx)
        except TimeoutError:
            return ToolResult.error(f"tool {call.name!r} timed out after {timeout:g} s")
        except anyio.get_cancelled_exc_class():
            raise
        except PluginHookError as exc:  # a hook the tool reached through ctx.run (a search)
            return self._contain(ctx, call, [exc], f"tool {call.name!r} failed")
        except CONTAINED as exc:
            # SystemExit too: a tool wrapping a command line (argparse, sys.exit) ends its own
            # call, not greenroom (from a worker thread it would leave the process hanging);
            # a KeyboardInterrupt or GeneratorExit a tool raises is its failure, not Ctrl-C
            error = first_error(exc)
            return ToolResult.error(f"tool {call.name!r} failed: {type(error).__name__}: {error}")
        return ToolResult.from_value(value)

    def _masked(self, result: ToolResult) -> ToolResult:
        """The result with every secret the runtime knows masked, whichever source produced
        it (a tool, an error, a plugin's failure)."""
        secrets = self._rt.secrets
        if not secrets:
            return result
        masked = secrets.mask(result.content)
        structured = mask_json(result.structured, secrets.mask)
        if masked != result.content or structured is not result.structured:
            # the source's own blocks may hold it too: only the masked forms go on
            result = attrs.evolve(result, content=masked, blocks=None, structured=structured)
        return result

    async def _estimate(self, parts: Sequence[MediaPart]) -> None:
        """Work out what each part costs in a worker thread (reading an image's header may
        load Pillow and decode its start), so that ``_bound`` finds it cached and the
        event loop never waits for it."""
        family = model_family(self._rt.model)
        await anyio.to_thread.run_sync(lambda: [media_tokens(p, family) for p in parts])

    async def _bound(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> ToolResult:
        """The result compacted, masked and cut to ``max_result_tokens``, whichever source
        produced it: its images and sounds first (those that do not fit beside its text are
        left out), then its text (``greenroom.results.fitting``)."""
        result = self._masked(await compacted(result, call.name, self._rt.results))
        limit = self._rt.agent.max_result_tokens
        result, dropped = bound_parts(result, limit, model_family(self._rt.model))
        if dropped is not None:
            ctx.emit(
                ev.MediaDropped(
                    step=ctx.step,
                    call_id=call.id,
                    tool=call.name,
                    limit=limit,
                    kept=dropped.kept,
                    dropped=dropped.dropped,
                    dropped_tokens=dropped.dropped_tokens,
                )
            )
        bounded, cut = await fit(self._rt.host, ctx, call, result, limit)
        if cut is not None:
            ctx.emit(
                ev.ResultCut(
                    step=ctx.step,
                    call_id=call.id,
                    tool=call.name,
                    limit=cut.limit,
                    original_chars=cut.original_chars,
                    kept_chars=cut.head_chars + cut.tail_chars,
                    kept_tokens=cut.kept_tokens,
                    omitted_tokens=cut.omitted_tokens,
                )
            )
        return bounded

    def _internal_error(self, ctx: RunContext, call: ToolCall, exc: Exception) -> ToolResult:
        """The error result of a call greenroom failed on; the traceback goes to the trace only."""
        log.debug("internal error while running %r", call.name, exc_info=exc)
        try:
            ctx.emit(ev.InternalError.of(exc, ctx.step, call.id, call.name))
        except Exception:  # the listener that failed may fail again: the result still goes out
            log.warning("could not report an internal error on %r", call.name, exc_info=True)
        return ToolResult.error(f"internal error in greenroom while running {call.name!r}; the call was not completed")

    def _contain(self, ctx: RunContext, call: ToolCall, failures: list[PluginHookError], what: str) -> ToolResult:
        """Report per-call hook failures and give the model an error result instead, naming
        the first plugin that failed."""
        for exc in failures:
            log.debug("%s", exc, exc_info=exc.error)
            ctx.emit(ev.PluginError.of(exc, ctx.step, call.id))
        first = failures[0]
        return ToolResult.error(f"{what}: plugin {first.plugin!r} failed in {first.hook}: {first.reason}")


def _unknown_tool_message(ctx: RunContext, name: str) -> str:
    from greenroom.run.suggest import close_in  # loaded on the first unknown name only

    failed = ctx._parts.failed_group(name)
    if failed is not None and failed[0] in ctx.groups:  # its own group's failure, not "did you mean" itself
        group_id, why = failed
        return f"tool {name!r} is in group {group_id!r}, whose tools could not be loaded: {why}"
    catalog = ctx.catalog()  # what the agent may use, group tools not loaded yet included
    close = close_in(catalog, name, n=3)
    msg = f"there is no tool named {name!r} available to this agent."
    if close:
        msg += f" Did you mean: {', '.join(close)}?"
    if len(catalog) <= 30:
        msg += f" Available tools: {', '.join(sorted(d.name for d in catalog))}."
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
