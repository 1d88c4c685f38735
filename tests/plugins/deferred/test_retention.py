"""Inject strategy: promotion, the discounted Beta retention model and its fixed flaws."""

from __future__ import annotations

from typing import Any

import pytest

from greenroom import events as ev
from greenroom_deferred import BetaState, DeferralState, DeferredConfig, DeferredToolsPlugin, RetentionConfig, breakeven
from greenroom_deferred.events import ToolDeferred
from greenroom_deferred.placing.retention import should_redefer

CFG = RetentionConfig()


def idle(state: BetaState, steps: int, start: int = 1) -> BetaState:
    for i in range(steps):
        state.observe(False, CFG.omega, start + i)
    return state


def test_worked_numbers_of_the_reference() -> None:
    fresh = BetaState.from_prior(0.01, CFG)
    assert round(fresh.upper90, 5) == 0.06208
    assert round(idle(BetaState.from_prior(0.01, CFG), 10).upper90, 5) == 0.02197
    assert round(idle(BetaState.from_prior(0.01, CFG), 20).upper90, 5) == 0.01257
    busy = BetaState.from_prior(0.01, CFG)
    for step in range(1, 6):
        busy.observe(True, CFG.omega, step)
    assert round(busy.upper90, 4) == 0.7520
    assert round(breakeven(100, 2.75, CFG.gamma), 4) == 0.0486
    assert round(breakeven(100, 2.75, CFG.gamma) * CFG.thresh_mult, 4) == 0.0243
    assert breakeven(5, 10, CFG.gamma) == float("inf")


def test_grace_period_counts_idle_time_from_promotion() -> None:
    # promoted at step 40 of a session, never called: the reference counted its idle
    # time from step 0 and would drop it at once
    state = BetaState.from_prior(0.01, CFG, step=40)
    idle(state, 20, start=41)
    assert state.upper90 < breakeven(100, 2.75, CFG.gamma) * CFG.thresh_mult
    assert not should_redefer(state, 41, 100, 2.75, CFG)
    assert not should_redefer(state, 44, 100, 2.75, CFG)
    assert should_redefer(state, 45, 100, 2.75, CFG)  # idle for defer_after = 5 steps


def turns_for_inject() -> list[dict[str, Any]]:
    def search(q: str) -> dict[str, Any]:
        return {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": q}}]}

    def call(name: str) -> dict[str, Any]:
        return {"tool_calls": [{"name": name, "arguments": {"q": "x"}}]}

    return [search("select:alpha_tool"), call("alpha_tool")] + [call("beta_tool")] * 10 + [{"text": "done"}]


def make_catalog() -> list[Any]:
    from greenroom import tool

    tools = []
    for name in ["alpha_tool", "beta_tool"] + [f"filler_{i:02d}" for i in range(20)]:
        words = " ".join(f"w{i}" for i in range(150))

        def impl(q: str) -> str:
            return "ok"

        t = tool(impl, name=name, description=f"{name} does things. {words}")
        tools.append(t)
    return tools


@pytest.mark.anyio
async def test_inject_promotes_found_tools_then_re_defers_idle_ones(make_runtime) -> None:
    plugin = DeferredToolsPlugin(
        DeferredConfig(strategy="inject", enabled=True, never_defer=("beta_tool",), retention=RetentionConfig(gamma=50))
    )
    rt = make_runtime(turns_for_inject(), tools=make_catalog(), plugins=[plugin], max_steps=20)
    events: list[ev.Event] = []
    rt.events.subscribe(events.append)
    s = rt.session()
    await s.run("go")
    sent = [[t.name for t in r.tools] for r in rt.model.requests]
    assert "alpha_tool" not in sent[0]
    assert "alpha_tool" in sent[1] and "alpha_tool" in sent[2]  # joins the tools array next step
    st = s.state[DeferralState]
    assert st.modes["alpha_tool"].mode == "deferred"
    assert st.modes["alpha_tool"].reason.startswith("retention: idle")
    (deferred,) = [e for e in events if isinstance(e, ToolDeferred)]
    # promoted at step 1, called at step 2, then idle: not before defer_after steps
    drop_step = next(i for i, names in enumerate(sent, 1) if i > 2 and "alpha_tool" not in names)
    assert drop_step - 2 >= plugin.config.retention.defer_after
    assert deferred.tool == "alpha_tool"
    # the listing tells the truth again: alpha_tool is back in it
    assert "alpha_tool" in rt.model.requests[-1].system_text


@pytest.mark.anyio
async def test_retention_state_continues_in_the_next_run_of_the_session(make_runtime) -> None:
    plugin = DeferredToolsPlugin(DeferredConfig(strategy="inject", enabled=True))
    turns = [
        {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "select:alpha_tool"}}]},
        {"text": "a"},
        {"text": "b"},
    ]
    rt = make_runtime(turns, tools=make_catalog(), plugins=[plugin])
    s = rt.session()
    await s.run("one")
    await s.run("two")
    st = s.state[DeferralState]
    assert st.step == 3  # session-wide steps, not reset per run
    assert st.retention["alpha_tool"].promoted_at == 1
    assert "alpha_tool" in [t.name for t in rt.model.requests[-1].tools]  # still promoted


@pytest.mark.anyio
async def test_listing_is_removed_when_nothing_is_deferred_any_more(make_runtime) -> None:
    from greenroom import tool

    tools = [tool(lambda q: q, name=f"t{i}", description="d " + "w " * 300) for i in range(16)]
    turns = [
        {
            "tool_calls": [
                {"name": "ToolSearch", "arguments": {"query": "select:" + ",".join(f"t{i}" for i in range(16))}}
            ]
        },
        {"text": "ok"},
    ]
    rt = make_runtime(
        turns, tools=tools, plugins=[DeferredToolsPlugin(DeferredConfig(strategy="inject", enabled=True))]
    )
    await rt.session().run("x")
    first, second = rt.model.requests
    assert "deferred" in first.system_text
    assert "deferred-tools" not in [sec.key for sec in second.system]
