"""Runs interleaved on one runtime give what the same runs give one after another.

Several sessions run at once on ONE runtime, as a gateway's clients do: each tenant may
use the shared tools and its own group (the other tenants' groups are hidden from it),
and on some runtimes only some clients' models search deferred tools on their side.
Each run's scripted model searches, loads its group, calls tools directly and through
``deferred_tool_call``, and yields to the other runs where hypothesis says. What each
run observes (the tools, deferred names and system text of every request, every tool
result, how the run ended, and the session's ``DeferralState`` after it) must be what
the same runs observe one after another on a fresh runtime.

State of one run kept on the plugin instance (the strategy, whether the run's
placements are settled, the strategy's memos) breaks this: another run's RunStart
replaced the strategy under a run that was still going.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextvars import ContextVar
from typing import Any

import anyio
import attrs
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from greenroom import (
    AgentConfig,
    ModelRequest,
    ModelResponse,
    Plugin,
    PolicyModel,
    RunContext,
    Runtime,
    ToolCallContext,
    ToolDescriptor,
    ToolGroup,
    ToolResult,
    hookimpl,
    make_plugin_host,
)
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin, Rule

PARAMS = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": False}
TOPICS = ("weather", "calendar", "email", "billing", "github", "slack")
SHARED = tuple(f"{t}_{v}" for t in TOPICS for v in ("get", "list", "create"))
OWN = "crm#"
"""Stands for the session's own group in a script (``crm0`` in session 0)."""
GROUP_TOOLS = ("lookup", "update", "note")
MAX_SESSIONS = 4

HOSTED: ContextVar[bool] = ContextVar("HOSTED", default=False)
"""Whether the model of the client running in this task searches on its side."""


class Echo:
    """A tool that answers with its name and arguments, after letting other runs go on."""

    timeout: float | None = None

    def __init__(self, name: str, group: str | None = None) -> None:
        topic, verb = name.split("_")
        description = f"{verb.capitalize()} {topic} records for the account, with paging and filters."
        self._descriptor = ToolDescriptor(name, description, PARAMS, group=group)

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        await anyio.sleep(0)
        return ToolResult(f"{self._descriptor.name}:{args.get('id')}")


def tenant_group(index: int) -> ToolGroup:
    """Session ``index``'s own group; its ``lookup`` tool is eager by rule, so it joins
    what is sent once the group has loaded (the others are deferred)."""
    gid = f"crm{index}"
    tools = [Echo(f"{gid}_{v}", gid) for v in GROUP_TOOLS]

    async def load() -> list[Echo]:
        await anyio.sleep(0)
        return tools

    return ToolGroup(gid, f"CRM {index}", "Customer records.", load, known=[t.descriptor for t in tools], defer=False)


class Tenants(Plugin):
    """Each session may use its own group only."""

    name = "tenants"
    nonblocking = True  # on the event loop: the runs interleave where the schedule says, not where threads happen to

    @hookimpl
    def greenroom_hidden_tools(self, ctx: RunContext, tools: Sequence[ToolDescriptor]) -> Iterable[str]:
        own = f"crm{ctx.session_id.removeprefix('s')}_"
        return [d.name for d in tools if d.name.startswith("crm") and not d.name.startswith(own)]


# ----------------------------------------------------------------------------- scripts

Turn = Mapping[str, Any]
RunKey = tuple[int, int]  # (session, run within the session)


def _call(name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": dict(args)}


searches = st.sampled_from(
    [
        "weather get",
        "calendar list",
        "create records",
        "customer records",
        "+slack list",
        "select:email_get,github_create",
        f"select:{OWN}_note",
        "select:crm0_note",  # another tenant's tool: not found
        "",
        f"group:{OWN}",
        "nothing matches this",
    ]
).map(lambda q: _call("ToolSearch", {"query": q}))
loads = st.one_of(
    st.just(_call("load_tools", {"group_id": OWN})),
    st.lists(st.sampled_from([f"{OWN}_{v}" for v in GROUP_TOOLS]), min_size=1, max_size=2, unique=True).map(
        lambda names: _call("load_tools", {"group_id": OWN, "tool_names": names})
    ),
)
targets = st.sampled_from([*SHARED, *(f"{OWN}_{v}" for v in GROUP_TOOLS)])
direct = targets.map(lambda n: _call(n, {"id": "7"}))
dispatched = targets.map(lambda n: _call("deferred_tool_call", {"tool_name": n, "arguments": {"id": "8"}}))
turns = st.lists(st.one_of(searches, loads, direct, dispatched), min_size=1, max_size=2).map(
    lambda calls: {"tool_calls": calls}
)
run_scripts = st.lists(turns, max_size=5).map(lambda ts: [*ts, {"text": "done"}])
plans = st.lists(st.lists(run_scripts, min_size=1, max_size=2), min_size=2, max_size=MAX_SESSIONS)


def for_session(value: Any, index: int) -> Any:
    """A script with the session's own group in place of ``OWN``."""
    if isinstance(value, str):
        return value.replace(OWN, f"crm{index}")
    if isinstance(value, list):
        return [for_session(v, index) for v in value]
    if isinstance(value, dict):
        return {k: for_session(v, index) for k, v in value.items()}
    return value


# ----------------------------------------------------------------------------- the runs


@attrs.define
class Seen:
    """What one run observed."""

    requests: list[tuple[tuple[str, ...], tuple[str, ...], str]] = attrs.field(factory=list)
    results: list[str] = attrs.field(factory=list)
    end: tuple[str, int, str | None] = ("", 0, None)
    state: dict[str, Any] = attrs.field(factory=dict)


def _key(request: ModelRequest) -> tuple[RunKey, int]:
    """The run a request belongs to (its user input names it) and its step in the run."""
    last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
    session, run = request.messages[last_user].content.split(":")
    steps = sum(1 for m in request.messages[last_user:] if m.role == "assistant")
    return (int(session), int(run)), steps


class Clients:
    """The runs' models: each plays its run's script, with hosted search when its
    client has it, and before answering yields to the other runs as often as the
    schedule says."""

    def __init__(self, scripts: Mapping[RunKey, Sequence[Turn]], pauses: Sequence[int]) -> None:
        self.scripts = scripts
        self.seen = {key: Seen() for key in scripts}
        self.order: list[RunKey] = []  # the run of each request, in the order they came
        self._pauses = pauses
        self._turn = 0
        self._inner = PolicyModel(lambda request: self.scripts[_key(request)[0]][_key(request)[1]])

    @property
    def native_tool_search(self) -> bool:
        return HOSTED.get()

    async def complete(self, request: ModelRequest) -> ModelResponse:
        self.order.append(_key(request)[0])
        self.seen[_key(request)[0]].requests.append(
            (tuple(d.name for d in request.tools), tuple(sorted(request.deferred)), request.system_text)
        )
        pause = self._pauses[self._turn % len(self._pauses)] if self._pauses else 0
        self._turn += 1
        for _ in range(pause):
            await anyio.sleep(0)
        return await self._inner.complete(request)


def build(config: DeferredConfig, clients: Clients) -> Runtime:
    return Runtime(
        model=clients,
        tools=[Echo(n) for n in SHARED],
        groups=[tenant_group(i) for i in range(MAX_SESSIONS)],
        host=make_plugin_host(records=[], extra=[Tenants(), DeferredToolsPlugin(config)]),
        agent=AgentConfig(max_steps=10, max_concurrency=1),  # a turn's calls in order, whatever runs beside it
    )


async def play_session(rt: Runtime, clients: Clients, index: int, runs: int, hosted: bool, start: int) -> None:
    HOSTED.set(hosted)
    for _ in range(start):
        await anyio.sleep(0)
    session = rt.session(f"s{index}")
    for run in range(runs):
        before = len(session.messages)
        outcome = await session.run(f"{index}:{run}")
        seen = clients.seen[(index, run)]
        seen.results = [m.content for m in session.messages[before:] if m.role == "tool"]
        seen.end = (outcome.stop_reason, outcome.steps, outcome.error)
        seen.state = attrs.asdict(session.snapshot()[DeferralState], filter=lambda a, _: a.eq)


async def observe(
    config: DeferredConfig, plan: Sequence[Sequence[Any]], hosting: str, pauses: Sequence[int], starts: Sequence[int]
) -> tuple[Clients, Clients]:
    """The plan's sessions at once on one runtime, then one after another on a fresh one."""
    scripts = {(s, r): for_session(script, s) for s, runs in enumerate(plan) for r, script in enumerate(runs)}

    def hosted(index: int) -> bool:
        return hosting == "odd" and index % 2 == 1

    together = Clients(scripts, pauses)
    rt = build(config, together)
    async with anyio.create_task_group() as tg:
        for s, runs in enumerate(plan):
            tg.start_soon(play_session, rt, together, s, len(runs), hosted(s), starts[s % len(starts)])
    alone = Clients(scripts, ())
    rt = build(config, alone)
    for s, runs in enumerate(plan):
        await play_session(rt, alone, s, len(runs), hosted(s), 0)
    return together, alone


def config_for(strategy: str) -> DeferredConfig:
    return DeferredConfig(enabled=True, strategy=strategy, rules=(Rule("crm*_lookup", "eager"),))  # type: ignore[arg-type]


# Session 1 loads its group on its first step; session 0's second run starts while
# session 1's run goes on. With the strategy on the plugin instance, that RunStart gave
# session 1 a new strategy that had not sent anything yet, so its next step sent the
# group's eager tool: the tools array changed in the middle of a dispatch run.
LOADS_WHILE_ANOTHER_STARTS: dict[str, Any] = {
    "plan": [
        [[{"text": "done"}], [{"text": "done"}]],
        [[{"tool_calls": [_call("load_tools", {"group_id": OWN})]}, {"text": "done"}]],
    ],
    "pauses": [1],
    "starts": [0],
}


def test_the_sessions_of_a_plan_do_interleave() -> None:
    case = LOADS_WHILE_ANOTHER_STARTS
    together, alone = anyio.run(observe, config_for("dispatch"), case["plan"], "none", case["pauses"], case["starts"])
    assert together.order == [(0, 0), (1, 0), (0, 1), (1, 0)]
    assert alone.order == [(0, 0), (0, 1), (1, 0), (1, 0)]


PROPERTY = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize(
    ("strategy", "hosting"),
    # native: the odd sessions' clients search on their side, the others' work as dispatch
    [("dispatch", "none"), ("inject", "none"), ("native", "odd")],
)
@PROPERTY
@given(
    plan=plans,
    pauses=st.lists(st.integers(0, 4), min_size=1, max_size=12),
    starts=st.lists(st.integers(0, 6), min_size=1, max_size=MAX_SESSIONS),
)
@example(**LOADS_WHILE_ANOTHER_STARTS)
def test_interleaved_runs_see_what_runs_in_sequence_see(
    strategy: str, hosting: str, plan: Any, pauses: list[int], starts: list[int]
) -> None:
    together, alone = anyio.run(observe, config_for(strategy), plan, hosting, pauses, starts)
    assert together.seen.keys() == alone.seen.keys()
    for key, seen in alone.seen.items():
        assert together.seen[key] == seen, f"run {key}"
