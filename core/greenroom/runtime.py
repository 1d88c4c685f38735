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

import copy
import difflib
import functools
import hashlib
import json
import logging
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

import anyio
import attrs
import jsonschema

from greenroom import events as ev
from greenroom.config import AgentConfig
from greenroom.groups import ToolGroup
from greenroom.models import (
    Message,
    Model,
    ModelError,
    ModelRequest,
    RequestDraft,
    SystemSection,
    ToolCall,
    Usage,
    supports_native_tool_search,
)
from greenroom.plugins import PluginHookError, PluginHost
from greenroom.search import Ranking, ScoredTool, SearchQuery, keyword_search
from greenroom.state import (
    Scope,
    Snapshot,
    StateRegistry,
    StateStore,
    ToolPriors,
    ToolUsage,
    register_core_state,
)
from greenroom.tokens import compact_json, count_tokens, tool_json, tool_tokens
from greenroom.tools import Tool, ToolCallContext, ToolDescriptor, ToolResult

log = logging.getLogger("greenroom")


# ----------------------------------------------------------------------------- tools


class DuplicateToolError(ValueError):
    pass


class ToolSet(Mapping[str, Tool]):
    """The tools of a runtime by name, with their compiled argument validators."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._validators: dict[str, jsonschema.protocols.Validator] = {}
        self._descriptors: list[ToolDescriptor] | None = None
        self.version = 0  # bumped on every change, so views built from the set can be reused
        for t in tools:
            self.add(t)

    def add(self, tool: Tool, *, replace: bool = False) -> None:
        name = tool.descriptor.name
        if name in self._tools and not replace:
            raise DuplicateToolError(f"two tools are named {name!r}")
        self._tools[name] = tool
        self._validators.pop(name, None)
        self._descriptors = None
        self.version += 1

    def __getitem__(self, name: str) -> Tool:
        return self._tools[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._tools)

    def __len__(self) -> int:
        return len(self._tools)

    def descriptors(self) -> list[ToolDescriptor]:
        """Every tool's descriptor, in registration order (a fresh list; built once per change)."""
        if self._descriptors is None:
            self._descriptors = [t.descriptor for t in self._tools.values()]
        return list(self._descriptors)

    def validator(self, name: str) -> jsonschema.protocols.Validator:
        """The tool's argument validator, compiled on first use and kept."""
        v = self._validators.get(name)
        if v is None:
            schema = dict(self._tools[name].descriptor.parameters or {"type": "object"})
            cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
            v = cls(schema)
            self._validators[name] = v
        return v


# ----------------------------------------------------------------------------- gate


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


@attrs.frozen
class RunOutcome:
    run_id: str
    text: str
    steps: int
    stop_reason: Literal["final", "max_steps", "cancelled", "error"]
    usage: Usage
    error: str | None = None


# ----------------------------------------------------------------------------- context


class RunContext:
    """What plugins see of a run. Tools never see this."""

    def __init__(self, runtime: Runtime, session: Session, run_id: str, user_input: str) -> None:
        self.runtime = runtime
        self.session = session
        self.run_id = run_id
        self.input = user_input
        self.step = 0
        self.state = StateStore(runtime.registry, Scope.RUN)
        self.hidden: frozenset[str] = frozenset()
        self.usage_total = Usage()
        self._visible: tuple[int, frozenset[str], list[ToolDescriptor]] | None = None

    # shortcuts plugins use often
    @property
    def agent(self) -> AgentConfig:
        return self.runtime.agent

    @property
    def session_state(self) -> StateStore:
        return self.session.state

    @property
    def profile_state(self) -> StateStore:
        return self.runtime.profile_state

    @property
    def tools(self) -> ToolSet:
        return self.runtime.tools

    @property
    def usage(self) -> ToolUsage:
        return self.state[ToolUsage]

    @property
    def priors(self) -> ToolPriors:
        return self.profile_state[ToolPriors]

    def visible_descriptors(self) -> list[ToolDescriptor]:
        """Every tool this agent may use in this run (hidden tools removed); a fresh list,
        rebuilt only when the tool set or the hidden set changed."""
        tools = self.runtime.tools
        cached = self._visible
        if cached is None or cached[0] != tools.version or cached[1] is not self.hidden:
            visible = [d for d in tools.descriptors() if d.name not in self.hidden]
            cached = self._visible = (tools.version, self.hidden, visible)
        return list(cached[2])

    def emit(self, event: ev.Event) -> None:
        self.runtime.events.emit(event)

    async def search(
        self, query: SearchQuery, candidates: Sequence[ToolDescriptor]
    ) -> tuple[list[ScoredTool], list[Ranking]]:
        """Rank candidates through the search hooks (keyword fallback when no ranker)."""
        return await self.runtime.search(query, candidates, self)


# ----------------------------------------------------------------------------- session


class Session:
    """One conversation: its messages and session-scoped state."""

    def __init__(self, runtime: Runtime, session_id: str | None = None) -> None:
        self.runtime = runtime
        self.id = session_id or uuid.uuid4().hex[:12]
        self.messages: list[Message] = []
        self.state = StateStore(runtime.registry, Scope.SESSION)
        self.unknown_state: dict[str, Any] = {}
        self.runs = 0
        self.last_snapshot: Snapshot | None = None

    async def run(self, user_input: str) -> RunOutcome:
        return await self.runtime.run(self, user_input)

    def snapshot(self, run_ctx: RunContext | None = None) -> Snapshot:
        values: dict[type, Any] = {}
        values.update(dict(self.runtime.profile_state.items()))
        values.update(dict(self.state.items()))
        if run_ctx is not None:
            values.update(dict(run_ctx.state.items()))
        return Snapshot(values)

    def fork(self, session_id: str | None = None) -> Session:
        """A sub-agent session that inherits this one's session state (not its messages)."""
        child = Session(self.runtime, session_id)
        for _cls, value in self.state.items():
            child.state.set(copy.deepcopy(value))
        child.unknown_state = copy.deepcopy(self.unknown_state)
        return child

    # persistence ---------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        from greenroom.config import converter

        state = dict(self.unknown_state)
        for cls, value in self.state.items():
            key = self.runtime.registry.key(cls)
            state[key.id] = converter.unstructure(value)
        return {
            "format": "greenroom.session/1",
            "id": self.id,
            "agent": self.runtime.agent.id,
            "runs": self.runs,
            "messages": converter.unstructure(self.messages),
            "state": state,
        }

    def save(self, path: str | Path) -> Path:
        """Write the session atomically (a crash mid-save keeps the previous file)."""
        from greenroom.sessions import write_json_atomic

        return write_json_atomic(Path(path), self.to_json())

    @classmethod
    def from_json(cls, runtime: Runtime, data: Mapping[str, Any], source: str = "<session>") -> Session:
        from greenroom.config import converter

        if data.get("format") != "greenroom.session/1":
            raise SessionError(f"{source}: not a greenroom session file (format {data.get('format')!r})")
        s = cls(runtime, str(data.get("id") or ""))
        s.runs = int(data.get("runs", 0))
        try:
            s.messages = converter.structure(data.get("messages", []), list[Message])
        except Exception as exc:
            raise SessionError(f"{source}: messages: {exc}") from None
        known = runtime.registry.by_id()
        for key_id, raw in (data.get("state") or {}).items():
            key = known.get(key_id)
            if key is None or key.scope is not Scope.SESSION:
                # a plugin that is not installed now: keep its state so nothing is lost
                s.unknown_state[key_id] = raw
                continue
            try:
                s.state.set(converter.structure(raw, key.cls))
            except Exception as exc:
                raise SessionError(f"{source}: state {key_id}: {exc}") from None
        return s


class SessionError(ValueError):
    pass


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
        for contributed in host.call_sync("greenroom_tools", tools=self.tools, groups=self.groups):
            for t in contributed or ():
                name = t.descriptor.name
                if name in self.user_tool_names:
                    raise DuplicateToolError(
                        f"a plugin adds a tool named {name!r}, and one of the agent's tools has that name; "
                        'rename it (for an MCP server with naming = "bare", use naming = "prefixed")'
                    )
                self.tools.add(t)
        self.profile_state = StateStore(self.registry, Scope.PROFILE)
        self._token_cache: dict[int, tuple[Any, int]] = {}
        self._history_tokens: tuple[tuple[Message, ...], int] = ((), 0)
        self._tools_digest: tuple[tuple[ToolDescriptor, ...], Any, int] = ((), hashlib.sha256(), 0)
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
            ctx.session.last_snapshot = ctx.session.snapshot(ctx)
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
                system=list(system), tools=ctx.visible_descriptors(), messages=list(ctx.session.messages), step=ctx.step
            )
            await self.host.call("greenroom_before_inference", ctx=ctx, request=draft)
            request = draft.freeze()
            self.events.emit(self.describe_request(request))
            response = await self.model.complete(request)
            ctx.usage_total = ctx.usage_total + response.usage
            ctx.session.messages.append(response.message)
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
            ctx.session.messages.extend(results)
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
            ctx.session.messages.extend(r for r in results if r is not None)
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

    # -- accounting ---------------------------------------------------------------------
    def _cached_tool_tokens(self, d: ToolDescriptor) -> tuple[str, int]:
        hit = self._token_cache.get(id(d))
        if hit is None or hit[0][0] is not d:
            text = tool_json(d)
            hit = ((d, text), tool_tokens(d))
            self._token_cache[id(d)] = hit
        return hit[0][1], hit[1]

    def _messages_tokens(self, messages: Sequence[Message]) -> int:
        """Tokens of a history, counting only what was appended since the last request
        (a history that was rewritten, by compaction say, is counted afresh)."""
        prev, prev_tokens = self._history_tokens
        n = len(prev)
        # tuple equality compares identity first, item by item, in C
        if 0 < n <= len(messages) and tuple(messages[:n]) == prev:
            total = prev_tokens + sum(message_tokens(m) for m in messages[n:])
        else:
            total = sum(message_tokens(m) for m in messages)
        self._history_tokens = (tuple(messages), total)
        return total

    def describe_request(self, request: ModelRequest) -> ev.RequestSent:
        """Token counts of the three parts of a request and the cacheable-prefix hash."""
        tools = tuple(request.tools)
        seen_tools, seen_hash, seen_tokens = self._tools_digest
        if seen_tools == tools:  # the same definitions as last step: identity checks only
            h, tools_tok = seen_hash.copy(), seen_tokens
        else:
            h = hashlib.sha256()
            tools_tok = 0
            for d in tools:
                text, n = self._cached_tool_tokens(d)
                tools_tok += n
                h.update(text.encode())
                h.update(b"\n")
            self._tools_digest = (tools, h.copy(), tools_tok)
        # tools left to the provider's hosted search are not rendered into the prompt
        deferred = request.deferred if supports_native_tool_search(self.model) else frozenset()
        if deferred:
            tools_tok -= sum(self._cached_tool_tokens(d)[1] for d in tools if d.name in deferred)
            h.update(b"\x00deferred\x00" + "\n".join(sorted(deferred)).encode())
        stable = "\n\n".join(s.text for s in request.system if s.stable)
        h.update(b"\x00system\x00" + stable.encode())
        messages_tok = self._messages_tokens(request.messages)
        return ev.RequestSent(
            step=request.step,
            system_tokens=_text_tokens(request.system_text),
            tools_tokens=tools_tok,
            messages_tokens=messages_tok,
            prefix_hash=h.hexdigest()[:16],
            tool_names=tuple(d.name for d in request.tools),
            deferred_tools=tuple(d.name for d in request.tools if d.name in deferred),
        )


@functools.lru_cache(maxsize=64)
def _text_tokens(text: str) -> int:
    """System prompts repeat from step to step; count each distinct one once."""
    return count_tokens(text)


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


_MESSAGE_TOKENS: dict[int, tuple[Message, int]] = {}


def message_tokens(m: Message) -> int:
    hit = _MESSAGE_TOKENS.get(id(m))
    if hit is not None and hit[0] is m:
        return hit[1]
    n = count_tokens(m.content)
    for c in m.tool_calls:
        n += count_tokens(c.name) + count_tokens(
            compact_json(c.arguments) if c.arguments is not None else (c.raw_arguments or "")
        )
    if len(_MESSAGE_TOKENS) > 50_000:
        _MESSAGE_TOKENS.clear()
    _MESSAGE_TOKENS[id(m)] = (m, n)
    return n


def validation_problems(tools: ToolSet, name: str, args: Mapping[str, Any]) -> list[str]:
    """Every problem with a call's arguments: JSON Schema first, then the tool's own check."""
    problems = []
    for err in sorted(tools.validator(name).iter_errors(dict(args)), key=lambda e: list(map(str, e.path))):
        where = "/".join(str(p) for p in err.absolute_path) or "(arguments)"
        problems.append(f"{where}: {err.message}")
    tool = tools[name]
    check = getattr(tool, "validate_args", None)
    if not problems and callable(check):
        problems.extend(check(dict(args)) or [])
    return problems


def invalid_arguments_message(descriptor: ToolDescriptor, problems: Sequence[str]) -> str:
    """The error for invalid arguments: each problem, then the full schema to fix them."""
    lines = [f"invalid arguments for {descriptor.name!r}:"]
    lines += [f"- {p}" for p in problems]
    lines.append(f"The tool's full parameter schema: {json.dumps(dict(descriptor.parameters), sort_keys=True)}")
    return "\n".join(lines)
