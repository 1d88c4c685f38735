"""Learned priors place every kind of tool: a tool of a group not loaded yet (an MCP
server's, say) that learning puts in the eager set starts eager, sent from the schema its
catalog holds, and its first call loads the group. Rules still win over priors."""

from __future__ import annotations

from typing import Any

import pytest

from greenroom import Plugin, ToolGroup, ToolPriors, hookimpl, tool
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin, PlacementSource, Rule

pytestmark = pytest.mark.anyio

WORDS = " ".join(f"w{i}" for i in range(150))
loads: list[str] = []


def server_tools() -> list[Any]:
    out = []
    for i in range(15):

        def impl(q: str, i: int = i) -> str:
            return f"srv {i}: {q}"

        out.append(tool(impl, name=f"srv_t{i:02d}", description=f"Server tool {i}. {WORDS}", group="srv"))
    return out


async def load() -> list[Any]:
    loads.append("srv")
    return server_tools()


def server() -> ToolGroup:
    return ToolGroup("srv", "srv", "a server", load, known=[t.descriptor for t in server_tools()])


class Learned(Plugin):
    name = "learned"
    nonblocking = True

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        ctx.profile_state.set(
            ToolPriors(
                p={"srv_t03": 0.95, "srv_t04": 0.001},
                sessions=7,
                loaded=True,
                sets={frozenset({"srv_t03"}): 0.95, frozenset({"srv_t04"}): 0.001},
            )
        )


def runtime(make_runtime: Any, turns: list[Any], **config: Any) -> Any:
    rt = make_runtime(turns, plugins=[Learned(), DeferredToolsPlugin(DeferredConfig(enabled=True, **config))])
    rt.groups["srv"] = server()
    return rt


@pytest.mark.parametrize("strategy", ["dispatch", "inject"])
async def test_a_learned_group_tool_starts_eager_and_its_first_call_loads_the_group(make_runtime, strategy) -> None:
    loads.clear()
    turns = [{"tool_calls": [{"name": "srv_t03", "arguments": {"q": "hi"}}]}, {"text": "done"}]
    rt = runtime(make_runtime, turns, strategy=strategy)
    request = await rt.preview()
    assert "srv_t03" in [d.name for d in request.tools] and "srv_t04" not in [d.name for d in request.tools]
    assert loads == []  # placed from the catalog: no server started for it
    session = rt.session()
    outcome = await session.run("go")
    assert outcome.stop_reason == "final" and loads == ["srv"]
    (result,) = [m for m in session.messages if m.role == "tool"]
    assert result.content == "srv 3: hi" and not result.is_error
    placement = session.state[DeferralState].modes["srv_t03"]
    assert placement.source is PlacementSource.PRIOR and placement.detail.startswith("prior: an eager set covering 95%")


async def test_a_rule_still_wins_over_priors(make_runtime) -> None:
    rt = runtime(make_runtime, [{"text": "done"}], rules=(Rule("srv_t03", "deferred"),))
    session = rt.session()
    await session.run("go")
    assert session.state[DeferralState].modes["srv_t03"].source is PlacementSource.RULE
    assert "srv_t03" not in [d.name for d in rt.model.requests[0].tools]


async def test_with_deferral_inactive_a_learned_group_tool_still_starts_eager(make_runtime) -> None:
    # too few tools to defer: plain tools go eager, a group's stay deferred, and priors
    # still start the group tool the agent uses eager
    plugin = DeferredToolsPlugin(DeferredConfig(min_tools=500))  # automatic: off for so few tools
    rt = make_runtime([{"text": "done"}], plugins=[Learned(), plugin])
    rt.groups["srv"] = server()
    request = await rt.preview()
    names = [d.name for d in request.tools]
    assert "srv_t03" in names and "srv_t04" not in names
    session = rt.session()
    await session.run("go")
    st = session.state[DeferralState]
    assert not st.active
    assert st.modes["srv_t03"].source is PlacementSource.PRIOR
    assert st.modes["srv_t04"].mode == "deferred"
