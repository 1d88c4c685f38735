"""One tool call through the phases: a per-call hook that raises fails only its call, closed;
plugin tools run after the gates with the run's context."""

from __future__ import annotations

from typing import Any

import anyio
import attrs
import pytest

from greenroom import Decision, Event, Plugin, SearchQuery, ToolCall, ToolCallContext, hookimpl, tool
from greenroom import events as ev

pytestmark = pytest.mark.anyio

ran: list[str] = []


@tool
def echo(text: str) -> str:
    """Echo text."""
    ran.append(f"echo {text}")
    return text


@tool
def target(text: str) -> str:
    """The call a failing plugin trips over."""
    ran.append(f"target {text}")
    return f"target says {text}"


@attrs.frozen
class FinderUsed(Event):
    """What a plugin tool reports about the run it serves."""

    kind: str = attrs.field(init=False, default="finder_used")
    step: int = 0
    found: tuple[str, ...] = ()


@tool(name="finder", description="Find tools for a query.")
async def finder(query: str, ctx: ToolCallContext) -> str:
    assert ctx.run is not None, "a plugin's tool gets the run"
    found, _ = await ctx.run.search(SearchQuery.parse(query), ctx.run.visible_descriptors())
    ctx.run.emit(FinderUsed(step=ctx.run.step, found=tuple(s.name for s in found)))
    return ", ".join(s.name for s in found)


class FinderTools(Plugin):
    """Contributes ``finder``, a plugin tool that searches through the run."""

    name = "finder-tools"

    @hookimpl
    def greenroom_tools(self, tools: Any) -> list[Any]:
        return [finder]


def failing_plugin(hook: str, trips_on: str, *, is_async: bool) -> Plugin:
    """A plugin whose ``hook`` raises on calls to ``trips_on`` (on every search, for the
    search hooks), written sync or async; pluggy lets an implementation take only some of
    the hook's arguments."""

    def on_call(self: Any, call: ToolCall) -> None:
        if call.name == trips_on:
            raise ValueError("plugin bug")

    async def on_call_async(self: Any, call: ToolCall) -> None:
        on_call(self, call)

    def on_search(self: Any, query: SearchQuery) -> None:
        raise ValueError("plugin bug")

    async def on_search_async(self: Any, query: SearchQuery) -> None:
        on_search(self, query)

    searching = hook in ("greenroom_rank_tools", "greenroom_search_tools")
    impl = {
        (False, False): on_call,
        (False, True): on_call_async,
        (True, False): on_search,
        (True, True): on_search_async,
    }[(searching, is_async)]
    return type("Failing", (Plugin,), {"name": "failing", hook: hookimpl(impl)})()


PER_CALL_HOOKS = [
    ("greenroom_resolve_tool_call", "target", "call to 'target' was not run"),
    ("greenroom_before_tool_execute", "target", "call to 'target' was not run"),
    ("greenroom_after_tool_execute", "target", "the result of 'target' is withheld"),
    ("greenroom_rank_tools", "finder", "tool 'finder' failed"),
    ("greenroom_search_tools", "finder", "tool 'finder' failed"),
]


@pytest.mark.parametrize("is_async", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize(("hook", "tool_name", "what"), PER_CALL_HOOKS, ids=[h for h, _, _ in PER_CALL_HOOKS])
async def test_a_per_call_hook_that_raises_fails_that_call_closed_and_the_run_goes_on(
    make_runtime, hook: str, tool_name: str, what: str, is_async: bool
) -> None:
    ran.clear()
    arguments = {"query": "echo"} if tool_name == "finder" else {"text": "secret"}
    rt = make_runtime(
        [
            {
                "tool_calls": [
                    {"name": tool_name, "arguments": arguments},
                    {"name": "echo", "arguments": {"text": "hi"}},
                ]
            },
            {"text": "done"},
        ],
        tools=[echo, target],
        plugins=[FinderTools(), failing_plugin(hook, tool_name, is_async=is_async)],
    )
    events: list[Event] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    outcome = await session.run("go")

    assert outcome.stop_reason == "final" and outcome.text == "done"  # the run went on
    failed, other = (m for m in session.messages if m.role == "tool")
    assert failed.is_error and failed.name == tool_name
    assert failed.content == f"{what}: plugin 'failing' failed in {hook}: ValueError: plugin bug"
    assert "secret" not in failed.content and "Traceback" not in failed.content
    assert other.content == "hi" and not other.is_error  # only that call failed
    if hook == "greenroom_after_tool_execute":
        assert ran == ["target secret", "echo hi"] or ran == ["echo hi", "target secret"]  # it ran; withheld
    else:
        assert ran == ["echo hi"]  # the failing call was not run (or its search never answered)
    (error,) = [e for e in events if isinstance(e, ev.PluginError)]
    assert (error.plugin, error.hook, error.message) == ("failing", hook, "ValueError: plugin bug")
    assert error.step == 1 and error.call_id == "call_1_0" and "(not installed)" in error.distribution
    assert isinstance(events[-1], ev.RunFinished) and events[-1].stop_reason == "final"


class AllowAll(Plugin):
    """A policy plugin that allows every call (and so answers first for every gate)."""

    name = "allow-all"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    @hookimpl(tryfirst=True)
    def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> Decision:
        self.seen.append(call.name)
        return Decision.allow()


class BlockFinder(Plugin):
    name = "block-finder"

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> Decision | None:
        return Decision.block("no searching here") if call.name == "finder" else None


FIND = [{"tool_calls": [{"name": "finder", "arguments": {"query": "echo"}}]}, {"text": "done"}]


async def test_a_plugin_tool_runs_after_the_gates_with_the_run(make_runtime) -> None:
    gate = AllowAll()
    rt = make_runtime(FIND, tools=[echo, target], plugins=[FinderTools(), gate])
    events: list[Event] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    await session.run("go")
    (result,) = [m for m in session.messages if m.role == "tool"]
    assert gate.seen == ["finder"]  # the gate saw the plugin tool, like any tool
    assert not result.is_error and result.content.split(", ")[0] == "echo"  # Decision.allow() did not break it
    (used,) = [e for e in events if isinstance(e, FinderUsed)]
    assert used.step == 1 and used.found[0] == "echo"  # it read the run's step and emitted through the run


async def test_a_gate_may_block_a_plugin_tool(make_runtime) -> None:
    rt = make_runtime(FIND, tools=[echo], plugins=[FinderTools(), BlockFinder()])
    events: list[Event] = []
    rt.events.subscribe(events.append)
    session = rt.session()
    await session.run("go")
    (result,) = [m for m in session.messages if m.role == "tool"]
    assert result.is_error and result.content == "call to 'finder' was blocked: no searching here"
    assert not [e for e in events if isinstance(e, FinderUsed)]


async def test_user_tools_never_get_the_run(make_runtime) -> None:
    seen: list[Any] = []

    @tool
    def peek(ctx: ToolCallContext) -> str:
        """Looks for the run."""
        seen.append(ctx.run)
        return "ok"

    rt = make_runtime([{"tool_calls": [{"name": "peek"}]}, {"text": "done"}], tools=[peek], plugins=[FinderTools()])
    await rt.session().run("go")
    assert seen == [None]


async def test_cancelling_a_turn_of_one_call_cancels_the_tool_and_answers_it(make_runtime) -> None:
    started, cleaned = anyio.Event(), anyio.Event()
    ends: list[str] = []

    @tool
    async def slow() -> str:
        """Slow."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()
        return "x"

    class Ends(Plugin):
        name = "ends"

        @hookimpl
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            ends.append(outcome.stop_reason)

    rt = make_runtime([{"tool_calls": [{"name": "slow"}]}, {"text": "ok"}], tools=[slow], plugins=[Ends()])
    session = rt.session()
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run, "go")
        with anyio.fail_after(5):
            await started.wait()
        tg.cancel_scope.cancel()
    assert cleaned.is_set() and ends == ["cancelled"]
    (result,) = [m for m in session.messages if m.role == "tool"]
    assert result.is_error and "cancelled" in result.content


class WaitsForever(Plugin):
    """A gate (or after-execute observer) that waits on something that never happens."""

    name = "waits-forever"

    def __init__(self, where: str) -> None:
        super().__init__()
        self.where = where

    @hookimpl
    async def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> Decision | None:
        if self.where == "gate" and call.name == "target":
            await anyio.Event().wait()
        return None

    @hookimpl
    async def greenroom_after_tool_execute(self, ctx: Any, call: ToolCall, result: Any) -> None:
        if self.where == "after" and call.name == "target":
            await anyio.Event().wait()


@pytest.mark.parametrize(("where", "ran_target"), [("gate", False), ("after", True)])
async def test_a_per_call_hook_that_hangs_costs_its_call_not_the_run(
    make_runtime, where: str, ran_target: bool
) -> None:
    ran.clear()
    turns = [
        {"tool_calls": [{"name": "target", "arguments": {"text": "a"}}]},
        {"tool_calls": [{"name": "echo", "arguments": {"text": "b"}}]},
        {"text": "done"},
    ]
    rt = make_runtime(turns, tools=[echo, target], plugins=[WaitsForever(where)], tool_timeout=0.2)
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final"
    (first,) = [m for m in session.messages if m.role == "tool" and m.name == "target"]
    assert first.is_error and "greenroom_" in first.content and "did not finish within 0.2 s" in first.content
    assert ("target a" in ran) is ran_target
    assert "echo b" in ran
