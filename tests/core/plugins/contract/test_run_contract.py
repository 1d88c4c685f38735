"""The run-time plugin contract, with plugins written as users write them: every
implementation answers for itself (a failing after-hook beside an observer that still
sees every call; a plain gate that blocks longer than ``tool_timeout``; a plugin that
exits; an answer of the wrong shape), after-execute pairs with before-execute, and an
event observer is one plugin."""

from __future__ import annotations

import threading
from typing import Any

import anyio
import pytest

from greenroom import Plugin, RunContext, SearchQuery, ToolCall, ToolResult, hookimpl, tool
from greenroom.events import Event

pytestmark = pytest.mark.anyio


@tool
def echo(text: str) -> str:
    """Echo text."""
    return text


def two_calls() -> list[Any]:
    return [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"text": "b"}}, {"name": "nope", "arguments": {}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"bad": 1}}]},
        {"text": "done"},
    ]


class Audit(Plugin):
    name = "audit"

    def __init__(self) -> None:
        super().__init__()
        self.before: list[str] = []
        self.after: list[str] = []

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: RunContext, call: ToolCall, tool: Any) -> None:
        self.before.append(call.id)

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        self.after.append(call.id)


class Raises(Plugin):
    name = "raises-after"

    @hookimpl(tryfirst=True)
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        raise RuntimeError("billing is down")


async def test_a_raising_after_hook_does_not_silence_an_observer(make_runtime) -> None:
    audit = Audit()
    rt = make_runtime(two_calls(), tools=[echo], plugins=[audit, Raises()])
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final"
    # the two valid calls reached the gates; the audit saw both ends of each, in pairs
    assert len(audit.before) == 2 and audit.after == audit.before
    results = [m for m in session.messages if m.role == "tool" and m.name == "echo"]
    assert "plugin 'raises-after' failed in greenroom_after_tool_execute" in results[0].content


async def test_after_execute_only_for_calls_the_gates_saw_and_rejections_are_events(make_runtime) -> None:
    audit = Audit()
    rt = make_runtime(two_calls(), tools=[echo], plugins=[audit])
    seen: list[Event] = []
    rt.events.subscribe(seen.append)
    await rt.session().run("go")
    rejected = [e for e in seen if e.kind == "tool_rejected"]
    assert sorted((e.tool, e.reason) for e in rejected) == [  # type: ignore[attr-defined]
        ("echo", "invalid_arguments"),
        ("nope", "unknown_tool"),
    ]
    assert not {e.call_id for e in rejected} & set(audit.after)  # type: ignore[attr-defined]
    assert audit.after == audit.before


class SlowGate(Plugin):
    """A plain gate that blocks (a synchronous HTTP call to a policy server, say)."""

    name = "slow-gate"

    def __init__(self, release: threading.Event) -> None:
        super().__init__()
        self.release = release
        self.threads: set[int] = set()

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: RunContext, call: ToolCall, tool: Any) -> None:
        self.threads.add(threading.get_ident())
        if call.arguments and call.arguments.get("text") == "slow":
            self.release.wait(10)


async def test_a_plain_gate_that_blocks_is_bounded_and_named_and_the_loop_runs_on(make_runtime) -> None:
    release = threading.Event()
    gate = SlowGate(release)
    turns = [
        {"tool_calls": [{"name": "echo", "arguments": {"text": "slow"}}, {"name": "echo", "arguments": {"text": "x"}}]},
        {"text": "done"},
    ]
    rt = make_runtime(turns, tools=[echo], plugins=[gate], tool_timeout=0.3)
    session = rt.session()
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            await anyio.sleep(0.01)
            ticks += 1

    try:
        async with anyio.create_task_group() as tg:
            tg.start_soon(heartbeat)
            outcome = await session.run("go")
            tg.cancel_scope.cancel()
    finally:
        release.set()
    assert outcome.stop_reason == "final"
    slow, fast = (m for m in session.messages if m.role == "tool")
    assert slow.is_error
    assert "plugin 'slow-gate'" in slow.content and "greenroom_before_tool_execute" in slow.content
    assert "did not finish within 0.3 s" in slow.content
    assert not fast.is_error and fast.content == "x"
    assert threading.get_ident() not in gate.threads  # it ran off the event loop...
    assert ticks > 5  # ...which kept running while it blocked


class Exits(Plugin):
    name = "exits"

    def __init__(self, what: type[BaseException]) -> None:
        super().__init__()
        self.what = what

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        raise self.what()


class SavesAtEnd(Plugin):
    name = "saves"
    saved = 0

    @hookimpl(trylast=True)
    async def greenroom_run_end(self, ctx: RunContext, outcome: Any) -> None:
        SavesAtEnd.saved += 1


@pytest.mark.parametrize("what", [SystemExit, KeyboardInterrupt, GeneratorExit])
async def test_a_plugin_that_exits_or_interrupts_fails_itself_not_the_process(make_runtime, what) -> None:
    SavesAtEnd.saved = 0
    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "done"}],
        tools=[echo],
        plugins=[Exits(what), SavesAtEnd()],
    )
    outcome = await rt.session().run("go")
    assert outcome.stop_reason == "final"
    assert SavesAtEnd.saved == 1


class HangsAtEnd(Plugin):
    name = "hangs-at-end"

    @hookimpl(tryfirst=True)
    async def greenroom_run_end(self, ctx: RunContext, outcome: Any) -> None:
        await anyio.Event().wait()


async def test_an_async_run_end_that_hangs_does_not_stop_the_others(make_runtime) -> None:
    SavesAtEnd.saved = 0
    rt = make_runtime([{"text": "done"}], plugins=[HangsAtEnd(), SavesAtEnd()], tool_timeout=0.2)
    seen: list[Event] = []
    rt.events.subscribe(seen.append)
    outcome = await rt.session().run("go")
    assert outcome.stop_reason == "final" and SavesAtEnd.saved == 1
    errors = [e for e in seen if e.kind == "error"]
    assert [(e.plugin, e.hook) for e in errors] == [("hangs-at-end", "greenroom_run_end")]  # type: ignore[attr-defined]
    assert seen[-1].kind == "run_end"


class GarbageHidden(Plugin):
    name = "garbage-hidden"

    @hookimpl
    def greenroom_hidden_tools(self, ctx: RunContext, tools: Any) -> Any:
        return 42  # not a collection of names


class GarbageGate(Plugin):
    name = "garbage-gate"

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: RunContext, call: ToolCall, tool: Any) -> Any:
        return "allow"  # a string, not a Decision


async def test_a_hidden_tools_hook_answering_garbage_fails_closed(make_runtime) -> None:
    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "done"}],
        tools=[echo],
        plugins=[GarbageHidden()],
    )
    session = rt.session()
    with pytest.raises(Exception, match="garbage-hidden") as info:
        await session.run("go")
    assert "expected an iterable of tool names" in str(info.value)
    assert not [m for m in session.messages if m.role == "tool" and not m.is_error]  # echo never ran


async def test_a_gate_answering_garbage_fails_its_call_closed(make_runtime) -> None:
    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "done"}],
        tools=[echo],
        plugins=[GarbageGate()],
    )
    session = rt.session()
    assert (await session.run("go")).stop_reason == "final"
    (result,) = [m for m in session.messages if m.role == "tool"]
    assert result.is_error and "garbage-gate" in result.content and "expected a Decision" in result.content


class Observer(Plugin):
    """Everything a tracing or audit plugin needs, in one hook."""

    name = "observer"
    nonblocking = True

    def __init__(self) -> None:
        super().__init__()
        self.events: list[tuple[str | None, str]] = []

    @hookimpl
    def greenroom_event(self, ctx: RunContext | None, event: Event) -> None:
        self.events.append((None if ctx is None else ctx.run_id, event.kind))


class BrokenObserver(Plugin):
    name = "broken-observer"

    @hookimpl
    def greenroom_event(self, ctx: RunContext | None, event: Event) -> None:
        raise ValueError("collector unreachable")


def test_hook_greenroom_event(make_runtime) -> None:
    observer = Observer()
    rt = make_runtime(two_calls(), tools=[echo], plugins=[BrokenObserver(), observer])
    seen: list[Event] = []
    rt.events.subscribe(seen.append)
    outcome = anyio.run(lambda: rt.session().run("go"))
    kinds = [k for _, k in observer.events]
    assert kinds[0] == "run_start" and kinds[-1] == "run_end"
    assert {"request", "response", "tool_result", "tool_rejected"} <= set(kinds)
    assert {run for run, _ in observer.events} == {outcome.run_id}  # every event knew its run
    # the broken observer is reported to the listeners, and never stopped the run
    assert outcome.stop_reason == "final"
    assert any(e.kind == "error" and getattr(e, "plugin", "") == "broken-observer" for e in seen)


async def test_runs_of_a_gateway_client_are_client_turns(make_runtime) -> None:
    from greenroom import RunKind

    observer = Observer()
    rt = make_runtime([], tools=[echo], plugins=[observer])
    run = rt.start_run(kind=RunKind.CLIENT)
    await run.start()
    await run.next_request()
    call = run.take_client_call("echo", {"text": "hi"})
    result = await run.call_tool(call)
    await run.end(run.outcome_of("final"))
    assert result.content == "hi"
    kinds = [k for _, k in observer.events]
    assert "client_call" in kinds and "response" not in kinds
    assert kinds[-1] == "run_end"


def test_greenroom_trace_hooks_prints_every_hook_call(make_runtime, monkeypatch, capsys) -> None:
    monkeypatch.setenv("GREENROOM_TRACE_HOOKS", "1")
    rt = make_runtime(
        [{"tool_calls": [{"name": "echo", "arguments": {"text": "a"}}]}, {"text": "done"}],
        tools=[echo],
        plugins=[Audit()],
    )
    anyio.run(lambda: rt.session().run("go"))
    err = capsys.readouterr().err
    assert "greenroom hook greenroom_before_tool_execute [audit]" in err and " ms" in err
    assert "greenroom hook greenroom_after_tool_execute [audit]" in err


class Prefetch(Plugin):
    """Loads a group from AfterInference and handles its own failure."""

    name = "prefetch"

    def __init__(self) -> None:
        super().__init__()
        self.caught: list[str] = []

    @hookimpl
    async def greenroom_after_inference(self, ctx: RunContext, response: Any) -> None:
        try:
            await ctx.search(SearchQuery.parse("anything"), ctx.visible_descriptors())
        except Exception as exc:  # a hook it called failed: its to handle, where it called
            self.caught.append(type(exc).__name__)


class BrokenRanker(Plugin):
    name = "broken-ranker"
    nonblocking = True

    @hookimpl
    def greenroom_rank_tools(self, ctx: Any, query: Any, candidates: Any) -> Any:
        raise RuntimeError("index gone")


async def test_a_hook_a_plugin_calls_inside_its_own_raises_where_it_called(make_runtime) -> None:
    prefetch = Prefetch()
    rt = make_runtime([{"text": "done"}], tools=[echo], plugins=[prefetch, BrokenRanker()])
    outcome = await rt.session().run("go")
    assert prefetch.caught == ["PluginHookError"]
    assert outcome.stop_reason == "final"  # handled by the plugin, not filed under AfterInference


class SlowStart(Plugin):
    name = "slow-start"

    @hookimpl
    async def greenroom_run_start(self, ctx: RunContext) -> None:
        await anyio.sleep(0.05)


def test_trace_hooks_prints_a_waiting_call_once_with_its_whole_time(make_runtime, monkeypatch, capsys) -> None:
    monkeypatch.setenv("GREENROOM_TRACE_HOOKS", "1")
    rt = make_runtime([{"text": "done"}], plugins=[SlowStart()])
    anyio.run(lambda: rt.session().run("go"))
    lines = [line for line in capsys.readouterr().err.splitlines() if "greenroom_run_start" in line]
    assert len(lines) == 1 and "failed" not in lines[0] and "slow-start" in lines[0]
    assert float(lines[0].split("] ")[1].split(" ms")[0]) >= 40


async def test_a_run_takes_no_step_before_it_started_or_after_it_ended(make_runtime) -> None:
    from greenroom.run.driver import RunEnded, RunNotStarted

    rt = make_runtime([], tools=[echo])
    run = rt.start_run()
    with pytest.raises(RunNotStarted):
        await run.next_request()  # its scope is not known yet: nothing may be offered or run
    with pytest.raises(RunNotStarted):
        await run.call_tool(ToolCall(id="c1", name="echo", arguments={"text": "x"}))
    await run.start()
    await run.next_request()
    await run.end(run.outcome_of("final"))
    with pytest.raises(RunEnded):
        await run.next_request()
