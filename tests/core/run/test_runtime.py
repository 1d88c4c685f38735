"""The run loop: phase order, model mistakes as results, concurrency, timeouts,
cancellation, gates, max_steps, sessions and state."""

from __future__ import annotations

import json
from typing import Any

import anyio
import attrs
import pytest

from greenroom import Decision, Plugin, Scope, ToolCall, hookimpl, tool
from greenroom.providers.scripted import ScriptedModel, ScriptError


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool
def explode() -> str:
    """Always fails."""
    raise ValueError("kaboom")


class Recorder(Plugin):
    name = "recorder"

    def __init__(self) -> None:
        super().__init__()
        self.seen: list[str] = []

    @hookimpl
    def greenroom_run_start(self, ctx: Any) -> None:
        self.seen.append("run_start")

    @hookimpl
    def greenroom_before_inference(self, ctx: Any, request: Any) -> None:
        self.seen.append(f"before_inference:{ctx.step}")

    @hookimpl
    async def greenroom_after_inference(self, ctx: Any, response: Any) -> None:
        self.seen.append(f"after_inference:{ctx.step}")

    @hookimpl
    def greenroom_resolve_tool_call(self, ctx: Any, call: ToolCall) -> None:
        self.seen.append(f"resolve:{call.name}")

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> None:
        self.seen.append(f"before_tool_execute:{call.name}")

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: Any, call: ToolCall, result: Any) -> None:
        self.seen.append(f"after_tool_execute:{call.name}:{'error' if result.is_error else 'ok'}")

    @hookimpl
    def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
        self.seen.append(f"run_end:{outcome.stop_reason}")


def tool_results(session: Any) -> list[Any]:
    return [m for m in session.messages if m.role == "tool"]


@pytest.mark.anyio
async def test_phases_run_in_order(make_runtime) -> None:
    rec = Recorder()
    rt = make_runtime(
        [{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 2}}]}, {"text": "3"}], tools=[add], plugins=[rec]
    )
    outcome = await rt.session().run("sum")
    assert outcome.text == "3" and outcome.steps == 2 and outcome.stop_reason == "final"
    assert rec.seen == [
        "run_start",
        "before_inference:1",
        "after_inference:1",
        "resolve:add",
        "before_tool_execute:add",
        "after_tool_execute:add:ok",
        "before_inference:2",
        "after_inference:2",
        "run_end:final",
    ]


@pytest.mark.anyio
async def test_model_and_tool_mistakes_become_results_the_model_reads(make_runtime) -> None:
    turns = [
        {
            "tool_calls": [
                {"name": "ad", "arguments": {}},
                {"name": "add", "arguments": "{not json"},
                {"name": "add", "arguments": {"a": "one"}},
                {"name": "explode", "arguments": {}},
            ]
        },
        {"text": "sorry"},
    ]
    rt = make_runtime(turns, tools=[add, explode])
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final"
    unknown, bad_json, invalid, failed = tool_results(session)
    assert all(r.is_error for r in (unknown, bad_json, invalid, failed))
    assert "no tool named 'ad'" in unknown.content and "Did you mean: add" in unknown.content
    assert "not a JSON object" in bad_json.content and "{not json" in bad_json.content
    # each problem listed, then the full schema so the model can fix it in one round trip
    assert "- a: 'one' is not of type 'integer'" in invalid.content
    assert "- (arguments): 'b' is a required property" in invalid.content
    schema_text = invalid.content.split("full parameter schema: ", 1)[1]
    assert json.loads(schema_text) == dict(add.descriptor.parameters)
    assert "ValueError: kaboom" in failed.content
    # results keep the order of the calls and their ids
    assert [r.tool_call_id for r in tool_results(session)] == ["call_1_0", "call_1_1", "call_1_2", "call_1_3"]


@pytest.mark.anyio
async def test_independent_calls_overlap(make_runtime) -> None:
    first, second = anyio.Event(), anyio.Event()

    @tool
    async def ping() -> str:
        """Waits for pong."""
        first.set()
        with anyio.fail_after(5):
            await second.wait()
        return "ping"

    @tool
    async def pong() -> str:
        """Waits for ping."""
        second.set()
        with anyio.fail_after(5):
            await first.wait()
        return "pong"

    rt = make_runtime([{"tool_calls": [{"name": "ping"}, {"name": "pong"}]}, {"text": "done"}], tools=[ping, pong])
    session = rt.session()
    await session.run("go")
    # each tool only finishes if the other runs at the same time
    assert [r.content for r in tool_results(session)] == ["ping", "pong"]


@pytest.mark.anyio
async def test_timeouts_become_errors_and_leave_no_task_running(make_runtime) -> None:
    cancelled = anyio.Event()

    @tool(timeout=0.05)
    async def hang() -> str:
        """Never returns."""
        try:
            await anyio.sleep_forever()
        finally:
            cancelled.set()
        return "unreachable"

    rt = make_runtime([{"tool_calls": [{"name": "hang"}]}, {"text": "gave up"}], tools=[hang])
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final"
    (result,) = tool_results(session)
    assert result.is_error and "timed out after 0.05 s" in result.content
    assert cancelled.is_set()  # the tool's task was cancelled, not left behind


@pytest.mark.anyio
async def test_cancelling_a_run_cancels_its_tools_and_still_ends_the_run(make_runtime) -> None:
    started, cleaned = anyio.Event(), anyio.Event()
    rec = Recorder()

    @tool
    async def slow() -> str:
        """Slow."""
        started.set()
        try:
            await anyio.sleep_forever()
        finally:
            cleaned.set()
        return "x"

    quick_done = anyio.Event()

    @tool
    async def quick() -> str:
        """Quick."""
        return "3"

    rt = make_runtime(
        [{"tool_calls": [{"name": "slow"}, {"name": "quick"}]}, {"text": "ok"}],
        tools=[slow, quick],
        plugins=[rec],
    )
    from greenroom import events as ev

    # ToolExecuted is emitted as the result is stored, with no await in between
    rt.events.subscribe(lambda e: quick_done.set() if isinstance(e, ev.ToolExecuted) and e.tool == "quick" else None)
    session = rt.session()
    async with anyio.create_task_group() as tg:
        tg.start_soon(session.run, "go")
        with anyio.fail_after(5):
            await started.wait()
            await quick_done.wait()
        tg.cancel_scope.cancel()
    assert cleaned.is_set()
    assert rec.seen[-1] == "run_end:cancelled"
    # every call of the interrupted turn has a result, so the session can go on
    results = {m.name: m for m in tool_results(session)}
    assert set(results) == {"slow", "quick"}
    assert results["slow"].is_error and "cancelled" in results["slow"].content
    assert results["quick"].content == "3" and not results["quick"].is_error  # finished before the cancel
    assert (await session.run("again")).stop_reason == "final"


@pytest.mark.anyio
async def test_max_steps_stops_a_looping_model(make_runtime) -> None:
    rt = make_runtime([{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}] * 5, tools=[add], max_steps=3)
    outcome = await rt.session().run("loop")
    assert outcome.stop_reason == "max_steps" and outcome.steps == 3


@pytest.mark.anyio
async def test_script_that_runs_out_fails_clearly(make_runtime) -> None:
    rt = make_runtime([{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}], tools=[add])
    with pytest.raises(ScriptError, match=r"the script has 1 turn"):
        await rt.session().run("x")


@pytest.mark.anyio
async def test_a_model_that_gives_up_still_ends_the_run_for_plugins(make_runtime) -> None:
    from greenroom import events as ev

    ends: list[str] = []

    class Ends(Plugin):
        name = "ends"

        @hookimpl
        def greenroom_run_end(self, ctx: Any, outcome: Any) -> None:
            ends.append(f"{outcome.stop_reason}: {outcome.error}")

    rt = make_runtime([{"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]}], tools=[add], plugins=[Ends()])
    finished: list[Any] = []
    rt.events.subscribe(lambda e: finished.append(e) if isinstance(e, ev.RunFinished) else None)
    with pytest.raises(ScriptError):
        await rt.session().run("x")  # step 2 asks for a turn the script does not have
    assert len(ends) == 1 and ends[0].startswith("error: ") and "the script has 1 turn" in ends[0]
    assert [(e.stop_reason, e.steps) for e in finished] == [("error", 2)]


def test_malformed_script_line_names_file_and_line(tmp_path) -> None:
    f = tmp_path / "s.jsonl"
    f.write_text('{"text": "ok"}\n{"tool_calls": [{"arguments": {}}]}\n')
    with pytest.raises(ScriptError, match=r"s.jsonl:2: tool_calls\[0\] needs a 'name'"):
        ScriptedModel.from_file(f)


class Gate(Plugin):
    name = "gate"

    @hookimpl
    def greenroom_before_tool_execute(self, ctx: Any, call: ToolCall, tool: Any) -> Decision | None:
        if call.name == "explode":
            return Decision.block("explosions are not allowed")
        if call.arguments and call.arguments.get("a") == 40:
            return Decision.answer("42 (cached)")
        return None


@pytest.mark.anyio
async def test_gate_blocks_answers_or_allows(make_runtime) -> None:
    turns = [
        {
            "tool_calls": [
                {"name": "explode"},
                {"name": "add", "arguments": {"a": 40, "b": 2}},
                {"name": "add", "arguments": {"a": 1, "b": 2}},
            ]
        },
        {"text": "ok"},
    ]
    rt = make_runtime(turns, tools=[add, explode], plugins=[Gate()])
    session = rt.session()
    await session.run("go")
    blocked, answered, allowed = tool_results(session)
    assert blocked.is_error and "blocked: explosions are not allowed" in blocked.content
    assert answered.content == "42 (cached)" and allowed.content == "3"


class Hider(Plugin):
    name = "hider"

    @hookimpl
    def greenroom_hidden_tools(self, ctx: Any, tools: Any) -> list[str]:
        return ["explode"]


@pytest.mark.anyio
async def test_hidden_tools_are_not_sent_and_cannot_be_called(make_runtime) -> None:
    rt = make_runtime([{"tool_calls": [{"name": "explode"}]}, {"text": "ok"}], tools=[add, explode], plugins=[Hider()])
    session = rt.session()
    await session.run("go")
    assert [t.name for t in rt.model.requests[0].tools] == ["add"]
    (result,) = tool_results(session)
    assert result.is_error and "no tool named 'explode'" in result.content


@attrs.define
class Counter:
    runs: int = 0
    notes: list[str] = attrs.field(factory=list)


class Counting(Plugin):
    name = "counting"

    @hookimpl
    def greenroom_register_state(self, registry: Any) -> None:
        registry.register(Counter, Scope.SESSION, owner=self.name)

    @hookimpl
    def greenroom_run_start(self, ctx: Any) -> None:
        counter = ctx.session_state[Counter]
        counter.runs += 1
        counter.notes.append(ctx.input)


@pytest.mark.anyio
async def test_session_state_survives_save_and_resume(make_runtime, tmp_path) -> None:
    rt = make_runtime([{"text": "a"}, {"text": "b"}, {"text": "c"}], plugins=[Counting()])
    session = rt.session("s1")
    await session.run("first")
    await session.run("second")
    snap = session.last_snapshot
    assert snap is not None and snap[Counter].runs == 2
    snap[Counter].runs = 99  # a snapshot is a copy: changing it changes nothing live
    assert session.state[Counter].runs == 2
    path = session.save(tmp_path / "s1.json")

    resumed = rt.load_session(path)
    assert resumed.id == "s1"
    assert [m.content for m in resumed.messages] == ["first", "a", "second", "b"]
    await resumed.run("third")
    assert resumed.state[Counter].notes == ["first", "second", "third"]


@pytest.mark.anyio
async def test_state_of_plugins_not_installed_is_kept_on_resume(make_runtime, tmp_path) -> None:
    rt = make_runtime([{"text": "a"}], plugins=[Counting()])
    session = rt.session("s")
    await session.run("x")
    path = session.save(tmp_path / "s.json")
    bare = make_runtime([{"text": "b"}])  # the counting plugin is gone
    resumed = bare.load_session(path)
    await resumed.run("y")
    resumed.save(path)
    back = rt.load_session(path)
    assert back.state[Counter].runs == 1  # nothing saved was lost


def test_bad_session_files_give_clear_errors(make_runtime, tmp_path) -> None:
    from greenroom.run.session import SessionError

    rt = make_runtime()
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(SessionError, match=r"bad\.json: not valid JSON"):
        rt.load_session(bad)
    bad.write_text('{"format": "other"}')
    with pytest.raises(SessionError, match="not a greenroom session file"):
        rt.load_session(bad)


@pytest.mark.anyio
async def test_fork_inherits_session_state_but_not_messages(make_runtime) -> None:
    rt = make_runtime([{"text": "a"}, {"text": "b"}], plugins=[Counting()])
    parent = rt.session()
    await parent.run("x")
    child = parent.fork()
    assert child.messages == [] and child.state[Counter].runs == 1
    await child.run("y")
    assert parent.state[Counter].runs == 1 and child.state[Counter].runs == 2


@pytest.mark.anyio
async def test_tool_usage_is_recorded_per_step(make_runtime) -> None:
    rt = make_runtime(
        [
            {"tool_calls": [{"name": "add", "arguments": {"a": 1, "b": 1}}]},
            {
                "tool_calls": [
                    {"name": "add", "arguments": {"a": 2, "b": 1}},
                    {"name": "add", "arguments": {"a": 3, "b": 1}},
                ]
            },
            {"text": "done"},
        ],
        tools=[add],
    )
    session = rt.session()
    await session.run("go")
    from greenroom import ToolUsage

    usage = session.last_snapshot[ToolUsage]
    assert usage.steps == 3
    assert usage.calls == {1: ["add"], 2: ["add", "add"]}
    assert usage.presence() == {"add": pytest.approx(2 / 3)}


def test_request_accounting_reuses_nothing_it_should_not(make_runtime) -> None:
    """Token counts and the prefix hash of a request do not depend on what was described
    before it: a grown history, a rewritten one and a changed tools array all give what a
    fresh runtime computes."""
    from greenroom.models import Message, ModelRequest, SystemSection

    def request(tools: Any, messages: Any) -> ModelRequest:
        return ModelRequest(system=(SystemSection("agent", "Be brief."),), tools=tools, messages=messages, step=1)

    history = (Message(role="user", content="add one and two"), Message(role="assistant", content="three"))
    steps = [
        request((add.descriptor,), history[:1]),
        request((add.descriptor,), history),  # appended
        request((add.descriptor,), (Message(role="user", content="a different, much longer first message"),)),
        request((add.descriptor, explode.descriptor), history),  # a tool joined
        request((explode.descriptor,), history),
    ]
    rt = make_runtime([], tools=[add, explode])
    for req in steps:
        fresh = make_runtime([], tools=[add, explode]).parts.describe_request(req)
        assert rt.parts.describe_request(req) == fresh
    assert len({make_runtime([]).parts.describe_request(r).prefix_hash for r in steps}) == 3
