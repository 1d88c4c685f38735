"""A tool call that goes wrong costs that call only, through ``greenroom run``: whatever
fails (the tool, its schema, the model's arguments, a plugin's per-call hook, greenroom
itself), the model reads an error result saying what, the ``ping`` called beside it in
the same turn answers, the run ends with the model's answer, the trace ends with
``run_end`` ("final"), and the saved session holds exactly the results the model read.

A search with nothing deferred is not a failure at all: it answers that, as a result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import Bench

PING = {"name": "ping", "arguments": {}}
# one call's arguments, 1,000 levels deep, as a model's raw JSON text (too deep to parse in Python)
DEEP = '{"data":' + '{"a":' * 998 + "{}" + "}" * 999
TOO_DEEP = "the arguments for 'store' are nested too deeply: more than 64 levels of objects and arrays"
DEFERRING = '[plugins.deferred-tools]\nenabled = true\nnever_defer = ["ping"]\n'
EVERY_TOOL_EAGER = '[plugins.deferred-tools]\nenabled = true\ndefault_mode = "eager"\n'


@dataclass(frozen=True)
class Fault:
    """One way a call goes wrong, and what the model reads about it."""

    call: dict[str, Any]  # what the model asks for, beside a call to ping
    tool: str  # the tool the result is for (a dispatched call's real tool)
    reads: str  # in the result the model reads
    is_error: bool = True
    warns: str | None = None  # what the live view says before the run
    left: tuple[str, dict[str, Any]] | None = None  # a trace record the fault leaves: kind, fields
    settings: dict[str, Any] = field(default_factory=dict)
    plugins: tuple[str, ...] = ()
    tools: tuple[str, ...] = ("TOOLS",)
    catalogs: tuple[str, ...] = ()
    extra: str = ""
    needs: str | None = None  # a fixture: "faulty" (the plugin installed) or "log_server"
    env: dict[str, str] = field(default_factory=dict)


def hook_raises(hook: str, reads: str) -> Fault:
    return Fault(
        {"name": "store", "arguments": {"data": {}}},
        "store",
        f"{reads}: plugin 'faulty' failed in {hook}: RuntimeError: faulty trips in {hook}",
        left=("error", {"plugin": "faulty", "hook": hook, "call_id": "call_1_0"}),
        plugins=("faulty",),
        needs="faulty",
        env={"FAULT_RAISE": hook},
    )


def unusable(name: str, fault: str, problem: str) -> Fault:
    return Fault(
        {"name": name, "arguments": {"q": "x"}},
        name,
        f"tool {name!r} cannot be used: its parameter schema is invalid ({problem}",
        warns=f"tool {name} is unusable: its parameter schema is invalid ({problem}",
        left=("tool_unusable", {"tool": name, "fault": fault}),
        tools=("TOOLS", "BROKEN"),
    )


FAULTS = {
    "the tool raises": Fault(
        {"name": "explode", "arguments": {}}, "explode", "tool 'explode' failed: RuntimeError: the disk is on fire"
    ),
    "the tool exits from its thread": Fault(
        {"name": "run_report", "arguments": {"args": "--weeks 2"}},
        "run_report",
        "tool 'run_report' failed: SystemExit: 2",
    ),
    "the tool exits on the event loop": Fault(
        {"name": "shut_down", "arguments": {}}, "shut_down", "tool 'shut_down' failed: SystemExit: shutting down"
    ),
    "the tool raises GeneratorExit from its thread": Fault(
        {"name": "stop_stream", "arguments": {}},
        "stop_stream",
        "tool 'stop_stream' failed: GeneratorExit: the stream was closed",
    ),
    "the tool never returns": Fault(
        {"name": "wait_forever", "arguments": {}},
        "wait_forever",
        "tool 'wait_forever' timed out after 0.2 s",
        settings={"tool_timeout": 0.2},
    ),
    "greenroom cannot render the result": Fault(
        {"name": "garble", "arguments": {}},
        "garble",
        "internal error in greenroom while running 'garble'; the call was not completed",
        left=("internal_error", {"tool": "garble", "error_type": "RuntimeError"}),
    ),
    "an unknown type in the schema": unusable("bad_type", "unknown_type", "#/properties/q/type: unknown type 'strng'"),
    "a bad regex in the schema": unusable(
        "bad_regex", "bad_pattern", "#/properties/q/pattern: '[a-' is not a valid regular expression"
    ),
    "a dangling $ref in the schema": unusable(
        "bad_ref", "dangling_ref", "#/properties/q/$ref: '#/$defs/Query' points to nothing in the schema"
    ),
    "a dangling $ref in a catalog": Fault(
        {"name": "lookup_order", "arguments": {"order": "A-1"}},
        "lookup_order",
        "tool 'lookup_order' cannot be used: its parameter schema is invalid (#/properties/order/$ref: "
        "'#/$defs/OrderId' points to nothing in the schema",
        warns="tool lookup_order is unusable: its parameter schema is invalid (#/properties/order/$ref: ",
        left=("tool_unusable", {"tool": "lookup_order", "fault": "dangling_ref"}),
        catalogs=("broken_catalog.jsonl",),
    ),
    "a bad regex in an MCP listing": Fault(
        {"name": "logs__parse", "arguments": {"when": "noon"}},
        "logs__parse",
        "tool 'logs__parse' cannot be used: its parameter schema is invalid (#/properties/when/pattern: "
        "'(unclosed' is not a valid regular expression",
        warns="tool logs__parse is unusable: its parameter schema is invalid (#/properties/when/pattern: ",
        left=("tool_unusable", {"tool": "logs__parse", "fault": "bad_pattern"}),
        needs="log_server",
    ),
    "an unknown tool": Fault(
        {"name": "stor", "arguments": {}}, "stor", "there is no tool named 'stor' available to this agent"
    ),
    "arguments that are not JSON": Fault(
        {"name": "store", "arguments": '{"data": {'}, "store", "the arguments for 'store' are not a JSON object"
    ),
    "arguments 1,000 levels deep": Fault({"name": "store", "arguments": DEEP}, "store", TOO_DEEP),
    "arguments 1,000 levels deep in deferred_tool_call": Fault(
        {"name": "deferred_tool_call", "arguments": {"tool_name": "store", "arguments": DEEP}},
        "store",
        TOO_DEEP,
        left=("resolve", {"requested": "deferred_tool_call", "resolved": "store"}),
        plugins=("deferred-tools",),
        extra=DEFERRING,
    ),
    "a search with nothing deferred": Fault(
        {"name": "ToolSearch", "arguments": {"query": "read the log"}},
        "ToolSearch",
        "There are no deferred tools to search; every tool you can use is already in your tool list.",
        is_error=False,
        plugins=("deferred-tools", "search-ranking"),
        extra=EVERY_TOOL_EAGER,
    ),
    "a ranker raises": Fault(
        {"name": "ToolSearch", "arguments": {"query": "store a document"}},
        "ToolSearch",
        "tool 'ToolSearch' failed: plugin 'faulty' failed in greenroom_rank_tools: RuntimeError: faulty trips in",
        left=("error", {"plugin": "faulty", "hook": "greenroom_rank_tools"}),
        plugins=("deferred-tools", "faulty"),
        extra=DEFERRING,
        needs="faulty",
        env={"FAULT_RAISE": "greenroom_rank_tools"},
    ),
    "the resolve hook raises": hook_raises("greenroom_resolve_tool_call", "call to 'store' was not run"),
    "a gate raises": hook_raises("greenroom_before_tool_execute", "call to 'store' was not run"),
    "the after-execute hook raises": hook_raises("greenroom_after_tool_execute", "the result of 'store' is withheld"),
    "a gate never returns": Fault(
        {"name": "store", "arguments": {"data": {}}},
        "store",
        "call to 'store' was not run: plugin 'faulty' failed in greenroom_before_tool_execute: "
        "TimeoutError: did not finish within 0.2 s",
        settings={"tool_timeout": 0.2},
        plugins=("faulty",),
        needs="faulty",
        env={"FAULT_HANG": "greenroom_before_tool_execute"},
    ),
}


@pytest.mark.parametrize(
    "fault",
    [
        pytest.param(f, id=name, marks=[pytest.mark.slow] if f.needs == "log_server" else [])
        for name, f in FAULTS.items()
    ],
)
def test_a_call_that_goes_wrong_costs_that_call_only(
    request: pytest.FixtureRequest, bench: Bench, fault: Fault
) -> None:
    extra = fault.extra
    if fault.needs == "faulty":
        bench = request.getfixturevalue("faulty")
    elif fault.needs == "log_server":
        extra += request.getfixturevalue("log_server")
    env = {**fault.env, "FAULT_MARKER": str(bench.folder / "marker")}
    config = bench.agent(
        [{"tool_calls": [fault.call, PING]}, {"text": "done"}],
        settings=fault.settings,
        plugins=fault.plugins,
        tools=fault.tools,
        catalogs=fault.catalogs,
        extra=extra,
    )
    run = bench.run(config, "go", quiet=False, env=env)
    end = run.ended("final", 0)
    assert end["error"] is None and end["failure"] is None
    assert run.stdout.rstrip().endswith("answer: done"), run.stdout  # the live view, as a user sees it
    if fault.warns is not None:
        assert fault.warns in run.stdout.split("step 1 request")[0], run.stdout

    # the session holds the turn whole: the call, its result, ping's result, the answer
    messages = run.messages()
    assert [m["role"] for m in messages] == ["user", "assistant", "tool", "tool", "assistant"]
    results = run.results()
    assert set(results) == {fault.tool, "ping"}
    got = results[fault.tool]
    assert got["is_error"] is fault.is_error and fault.reads in got["content"], got["content"]
    assert "Traceback" not in got["content"]
    assert (results["ping"]["content"], results["ping"]["is_error"]) == ("pong", False)
    # what the trace says the model got is what the session keeps
    traced = {r["tool"]: (r["content"], r["is_error"]) for r in run.events("tool_result")}
    assert traced == {name: (m["content"], m["is_error"]) for name, m in results.items()}
    if fault.left is not None:
        kind, fields = fault.left
        assert any(fields.items() <= r.items() for r in run.events(kind)), run.events(kind)
