"""Property: a model that sends 1,000 random turns never makes a run raise, and every tool
call it makes gets exactly one result.

Each turn is drawn while the run asks for it: unknown and real tool names, any characters
(lone surrogates included), malformed, huge and deeply nested arguments, parallel calls
(ids repeated on purpose), ``deferred_tool_call``, ``ToolSearch`` and ``load_tools`` with
good and bad arguments. The runtime has the deferred-tools and search-ranking plugins,
Python tools (one raises, one returns a large log, one takes an enum and an attrs object),
catalog tools (one with an invalid schema) and two groups (one whose loader fails). After
each session: every run ended by the answer or ``max_steps``; each assistant turn is
followed by exactly one result per call, in call order, within ``max_result_tokens``; the
trace ends with ``run_end``, pairs each ``run_start`` with one and holds no
``internal_error`` or plugin ``error``; the saved session loads back the same.
"""

from __future__ import annotations

import enum
import itertools
import json
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from greenroom import CatalogTool, ToolDescriptor, tool
from greenroom._support.arguments import parse_json_object
from greenroom.config import AgentConfig
from greenroom.events import Event, RunFinished, TraceWriter
from greenroom.models import Message, ModelRequest, ModelResponse, ToolCall
from greenroom.plugins.discovery import make_plugin_host
from greenroom.run.runtime import Runtime
from greenroom.tokens.counting import count_tokens
from greenroom.tools.groups import ToolGroup
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_ranking import RankingConfig, SearchRankingPlugin

SESSIONS = 25
TURNS_PER_SESSION = 40  # SESSIONS x TURNS_PER_SESSION = the 1,000 turns; fewer choices than hypothesis's buffer
HUGE = (100_000, 300_000)  # characters of a huge argument string
DEEP = (60, 1_500)  # levels of a deeply nested argument, either side of the 64-level bound
# Sessions are slow by design (forty turns, megabytes of arguments): one that runs out of
# hypothesis's buffer is dropped, and a failure prints its session as drawn, since shrinking
# sessions this slow takes minutes (add Phase.shrink to narrow one down)
SETTINGS = settings(
    max_examples=SESSIONS,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    phases=[Phase.explicit, Phase.generate],
)


class Color(enum.Enum):
    RED = "red"
    GREEN = "green"


@attrs.frozen
class Box:
    width: int
    height: int


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@tool
def boom(why: str = "") -> str:
    """Fail on purpose, as a buggy tool does."""
    raise ValueError(f"boom: {why}")


@tool
def big(lines: int) -> str:
    """Return a log of the given number of lines (large ones are cut by the runtime)."""
    return "2024-01-01 12:00:00 INFO worker heartbeat ok\n" * max(0, min(lines, 50_000))


@tool
def paint(color: Color, box: Box) -> str:
    """Paint a box in a color."""
    return f"{color.value} {box.width}x{box.height}"


PARAMS = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": False}
BROKEN = {"type": "object", "properties": {"n": {"type": "nope"}}}  # unusable: calling it says why
CATALOG = [
    CatalogTool(ToolDescriptor("crm_lookup", "Look up a customer record by id.", PARAMS), "<test catalog>"),
    CatalogTool(ToolDescriptor("broken_report", "Build a report.", BROKEN), "<test catalog>"),
]


def billing(id: str) -> str:
    """Work on a billing record (one function behind both billing tools)."""
    return f"billing record {id}"


def billing_tools() -> list[Any]:
    return [tool(billing, name=f"billing_{k}", description=f"{k.title()} a record.") for k in ("refund", "invoice")]


def groups() -> list[ToolGroup]:
    async def load_billing() -> list[Any]:
        return billing_tools()

    async def load_flaky() -> list[Any]:
        raise ConnectionError("flaky backend unreachable")

    ping = ToolDescriptor("flaky_ping", "Ping the flaky server.", {"type": "object", "properties": {}})
    return [
        ToolGroup("billing", "Billing", "Invoices and refunds.", load_billing, [t.descriptor for t in billing_tools()]),
        ToolGroup("flaky", "Flaky", "A server that never starts.", load_flaky, known=[ping]),
    ]


REAL = ("echo", "boom", "big", "paint", "crm_lookup", "broken_report", "billing_refund", "billing_invoice")
OWN = ("ToolSearch", "deferred_tool_call", "load_tools")
WORDS = ("billing", "refund", "echo", "paint", "color", "customer", "record", "invoice", "log", "zzz")

# any character, lone surrogates included: valid JSON can escape half a surrogate pair
# ("\ud800"), and bytes decoded with surrogateescape hold them, so text from a model or a
# server can carry them
CHARACTERS = st.characters() | st.characters(categories=["Cs"])


def texts(max_size: int, min_size: int = 0) -> st.SearchStrategy[str]:
    return st.text(CHARACTERS, min_size=min_size, max_size=max_size)


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | texts(12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts(6), inner, max_size=3),
    max_leaves=6,
)
json_objects = st.dictionaries(texts(8), json_values, max_size=3)
names = st.sampled_from(REAL + OWN + ("flaky_ping", "Echo", "ech0", "")) | texts(12)


def draw_name(data: st.DataObject) -> str:
    """A tool name: real, one of the plugin's, near or far from both, or huge."""
    if data.draw(st.integers(0, 59), label="huge name") == 59:
        return huge_text(data)
    return data.draw(names, label="tool")


def good_arguments(data: st.DataObject, name: str) -> dict[str, Any]:
    """Arguments that match ``name``'s schema (an empty object for tools without one here)."""
    ids = st.fixed_dictionaries({"id": texts(8)})
    box = st.fixed_dictionaries({"width": st.integers(0, 99), "height": st.integers(0, 99)})
    good: dict[str, st.SearchStrategy[dict[str, Any]]] = {
        "echo": st.fixed_dictionaries({"text": texts(20)}),
        "boom": st.fixed_dictionaries({"why": texts(10)}),
        "big": st.fixed_dictionaries({"lines": st.integers(0, 50_000)}),
        "paint": st.fixed_dictionaries({"color": st.sampled_from([c.value for c in Color]), "box": box}),
        "crm_lookup": ids,
        "billing_refund": ids,
        "billing_invoice": ids,
        "broken_report": st.fixed_dictionaries({"n": st.integers()}),
    }
    return data.draw(good.get(name, st.just({})), label="good arguments")


def huge_text(data: st.DataObject) -> str:
    # built from a short drawn chunk: drawing every character would exhaust hypothesis's buffer
    size = data.draw(st.integers(*HUGE), label="huge size")
    chunk = data.draw(texts(6, min_size=1), label="huge chunk")
    return (chunk * (size // len(chunk) + 1))[:size]


def deep_value(data: st.DataObject) -> Any:
    levels = data.draw(st.integers(*DEEP), label="depth")
    value: Any = {} if data.draw(st.booleans(), label="objects") else []
    for _ in range(levels - 1):
        value = {"a": value} if isinstance(value, dict) else [value]
    return value


def deep_text(data: st.DataObject) -> str:
    levels = data.draw(st.integers(*DEEP), label="depth")
    text = '{"a":' * levels + "1" + "}" * levels
    if data.draw(st.booleans(), label="truncated"):
        text = text[: data.draw(st.integers(0, len(text)), label="cut at")]
    return text


def raw_text(data: st.DataObject, name: str) -> str:
    """Argument text as a model might write it: broken, not an object, deep, or fine."""
    kinds = ["garbage", "truncated", "not an object", "deep", "brackets", "huge", "valid"]
    kind = data.draw(st.sampled_from(kinds), label="raw")
    if kind == "garbage":
        return data.draw(texts(30))
    if kind == "brackets":  # far deeper than any parser's stack, and never closed
        return data.draw(st.sampled_from(["[", '{"a":']), label="opener") * data.draw(st.integers(*HUGE))
    if kind == "huge":
        return json.dumps({data.draw(st.sampled_from(["text", "query", "x"])): huge_text(data)})
    if kind == "truncated":
        text = json.dumps(good_arguments(data, name))
        return text[: data.draw(st.integers(0, max(0, len(text) - 1)))]
    if kind == "not an object":
        return json.dumps(data.draw(json_values.filter(lambda v: not isinstance(v, dict))))
    if kind == "deep":
        return deep_text(data)
    return json.dumps(good_arguments(data, name))


def arguments_for(data: st.DataObject, name: str) -> dict[str, Any] | str:
    """A call's arguments: an object (good, random, huge or deep) or raw text."""
    kind = data.draw(st.sampled_from(["good", "random", "huge", "deep", "raw"]), label="arguments")
    if kind == "good":
        return good_arguments(data, name)
    if kind == "random":
        return data.draw(json_objects)
    if kind == "huge":
        key = data.draw(st.sampled_from(["text", "id", "why", "query", "x"]))
        return {key: huge_text(data)}
    if kind == "deep":
        return {"data": deep_value(data)}
    return raw_text(data, name)


def dispatch_arguments(data: st.DataObject) -> dict[str, Any] | str:
    kind = data.draw(st.sampled_from(["call", "no tool name", "raw"]), label="dispatch")
    if kind == "raw":
        return raw_text(data, "deferred_tool_call")
    inner_name = draw_name(data)
    inner: Any = arguments_for(data, inner_name)
    if data.draw(st.booleans(), label="inner not an object"):
        inner = data.draw(json_values)
    if kind == "no tool name":
        return {"arguments": inner}
    return {"tool_name": inner_name, "arguments": inner}


def search_arguments(data: st.DataObject) -> dict[str, Any]:
    kind = data.draw(st.sampled_from(["select", "required", "keywords", "empty", "garbage"]), label="query")
    if kind == "select":
        picked = [draw_name(data) for _ in range(data.draw(st.integers(0, 4), label="selected"))]
        query = "select:" + ",".join(picked)
    elif kind in ("required", "keywords"):  # "+word rest" requires the first word
        words = data.draw(st.lists(st.sampled_from(WORDS), min_size=int(kind == "required"), max_size=4))
        query = ("+" if kind == "required" else "") + " ".join(words)
    elif kind == "empty":
        query = data.draw(st.sampled_from(["", " ", "+", "select:"]))
    else:
        query = data.draw(texts(30))
    out: dict[str, Any] = {"query": query}
    if data.draw(st.booleans(), label="max_results"):
        out["max_results"] = data.draw(st.integers(-3, 80) | json_values)
    return out


def load_arguments(data: st.DataObject) -> dict[str, Any]:
    group = data.draw(st.sampled_from(["billing", "flaky", "nope", ""]) | texts(8), label="group")
    out: dict[str, Any] = {"group_id": group}
    if data.draw(st.booleans(), label="tool_names"):
        out["tool_names"] = data.draw(st.lists(names, max_size=3) | json_values)
    return out


def draw_call(data: st.DataObject, call_id: str) -> ToolCall:
    kind = data.draw(st.sampled_from(["tool", "dispatch", "search", "load"]), label="call")
    if kind == "tool":
        name = draw_name(data)
        args = arguments_for(data, name)
    else:
        name = {"dispatch": "deferred_tool_call", "search": "ToolSearch", "load": "load_tools"}[kind]
        args = {"dispatch": dispatch_arguments, "search": search_arguments, "load": load_arguments}[kind](data)
    if isinstance(args, str):  # what a provider builds from argument text that may not parse
        return ToolCall(call_id, name, parse_json_object(args), args)
    return ToolCall(call_id, name, args)


class RandomModel:
    """A model whose every turn hypothesis draws; its last turn is the final answer."""

    def __init__(self, data: st.DataObject, budget: int) -> None:
        self.data = data
        self.budget = budget
        self.turns = 0

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.turns += 1
        data = self.data
        if self.turns >= self.budget or data.draw(st.integers(0, 19), label="answer now") == 19:
            return ModelResponse(message=Message(role="assistant", content="done"), stop_reason="end")
        count = data.draw(st.integers(1, 4), label="parallel calls")
        calls = []
        for i in range(count):
            call_id = f"call_{self.turns}_{i}"
            if data.draw(st.integers(0, 9), label="reuse an id") == 0:
                call_id = data.draw(st.sampled_from(["dup", "call_1_0", ""]))
            calls.append(draw_call(data, call_id))
        text = data.draw(st.sampled_from(["", "Let me check."]), label="text")
        message = Message(role="assistant", content=text, tool_calls=tuple(calls))
        return ModelResponse(message=message, stop_reason="tool_use")


def build(data: st.DataObject, model: RandomModel) -> Runtime:
    deferred = DeferredConfig(
        enabled=True,
        strategy=data.draw(st.sampled_from(["dispatch", "inject"]), label="strategy"),
        # eager everywhere leaves ToolSearch nothing to search
        default_mode=data.draw(st.sampled_from(["deferred", "eager"]), label="default mode"),
        never_defer=("echo",),
    )
    agent = AgentConfig(
        max_steps=data.draw(st.integers(3, 60), label="max_steps"),
        max_concurrency=data.draw(st.integers(1, 4), label="max_concurrency"),
        max_result_tokens=data.draw(st.sampled_from([300, 25_000]), label="max_result_tokens"),
    )
    return Runtime(
        model=model,
        tools=[echo, boom, big, paint, *CATALOG],
        groups=groups(),
        host=make_plugin_host(records=[], extra=[DeferredToolsPlugin(deferred), SearchRankingPlugin(RankingConfig())]),
        agent=agent,
    )


def assert_one_result_per_call(messages: Sequence[Message], max_result_tokens: int) -> int:
    """Each assistant turn is followed by exactly its calls' results, in call order (ids
    repeated by the model included), each within the result bound; returns how many
    calls there were."""
    calls = 0
    answered = 0
    for i, m in enumerate(messages):
        if m.role == "assistant":
            results = [r.tool_call_id for r in itertools.takewhile(lambda r: r.role == "tool", messages[i + 1 :])]
            assert results == [c.id for c in m.tool_calls], f"turn {i}: results {results} for {m.tool_calls}"
            calls += len(m.tool_calls)
        elif m.role == "tool":
            answered += 1
            assert count_tokens(m.content) <= max_result_tokens, f"message {i}: a result over the bound"
    assert answered == calls, f"{answered} results for {calls} calls"
    return calls


def assert_trace(path: Path, runs: int, calls: int) -> None:
    """The trace file: every line JSON, ``run_start``/``run_end`` in pairs, ``run_end`` last,
    one ``tool_result`` per call, and nothing from greenroom's own error paths."""
    # JSON Lines end at "\n" only: str.splitlines would also split at U+2028 inside a string
    kinds = [json.loads(line)["kind"] for line in path.read_text(encoding="utf-8").split("\n") if line]
    assert kinds[-1] == "run_end"
    bounds = [k for k in kinds if k in ("run_start", "run_end")]
    assert bounds == ["run_start", "run_end"] * runs
    assert kinds.count("tool_result") == calls
    # a model's mistakes are the model's: none of them may reach a plugin failure or an internal error
    assert "internal_error" not in kinds and "error" not in kinds


@SETTINGS
@given(data=st.data())
def check_random_session(data: st.DataObject) -> None:
    model = RandomModel(data, TURNS_PER_SESSION)
    rt = build(data, model)
    seen: list[Event] = []
    rt.events.subscribe(seen.append)
    stops: list[str] = []
    with tempfile.TemporaryDirectory(prefix="greenroom-random-turns-") as tmp:
        trace_path = Path(tmp) / "trace.jsonl"
        trace = TraceWriter(trace_path)
        rt.events.subscribe(trace)
        session = rt.session()

        async def runs() -> None:
            while model.turns < model.budget:
                outcome = await session.run(data.draw(texts(20), label="user input"))
                assert outcome.stop_reason in ("final", "max_steps"), outcome
                stops.append(outcome.stop_reason)

        try:
            anyio.run(runs)
        finally:
            trace.close()
        calls = assert_one_result_per_call(session.messages, rt.agent.max_result_tokens)
        assert_trace(trace_path, len(stops), calls)
        assert seen[-1].kind == "run_end"
        assert [e.stop_reason for e in seen if isinstance(e, RunFinished)] == stops
        saved = session.save(Path(tmp) / "session.json")
        assert rt.load_session(saved).messages == session.messages
    TURNS_SEEN.append(model.turns)


TURNS_SEEN: list[int] = []


def test_a_thousand_random_turns_never_end_a_run_and_every_call_gets_one_result() -> None:
    TURNS_SEEN.clear()
    check_random_session()
    assert sum(TURNS_SEEN) >= SESSIONS * TURNS_PER_SESSION
