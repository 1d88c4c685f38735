"""Placement reasons are data: a source (an enum) plus words for people. Decisions read the
source, sessions save it by value and load it back, and ``greenroom inspect`` gets it
through the ``greenroom_inspect_tools`` hook."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from greenroom import Plugin, ToolDescriptor, ToolPriors, hookimpl, tool
from greenroom.cli.inspection import inspect_runtime
from greenroom_deferred import (
    BetaState,
    DeferralState,
    DeferredConfig,
    DeferredToolsPlugin,
    Placement,
    PlacementSource,
    RetentionConfig,
    Rule,
)

pytestmark = pytest.mark.anyio

KEY = "greenroom_deferred.state.DeferralState"  # its key in a saved session


def make_tools(n: int = 20) -> list[Any]:
    out = []
    words = " ".join(f"w{i}" for i in range(150))
    for i in range(n):

        def impl(q: str) -> str:
            return "ok"

        out.append(tool(impl, name=f"t{i:02d}", description=f"Tool {i}. {words}"))
    return out


class Priors(Plugin):
    name = "fake-priors"

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        ctx.profile_state.set(ToolPriors(p={"t01": 0.9}, sessions=3, loaded=True, sets={frozenset({"t01"}): 0.9}))


async def test_a_saved_session_keeps_each_source_and_loads_it_back(make_runtime, tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "select:t05"}}]}, {"text": "ok"}]
    cfg = DeferredConfig(strategy="inject", enabled=True, rules=(Rule("t00", "eager"),), never_defer=("t02",))
    rt = make_runtime(turns, tools=make_tools(), plugins=[Priors(), DeferredToolsPlugin(cfg)])
    session = rt.session()
    await session.run("x")
    modes = session.state[DeferralState].modes
    assert {n: modes[n].source for n in ("t00", "t01", "t02", "t03", "t05")} == {
        "t00": PlacementSource.RULE,
        "t01": PlacementSource.PRIOR,
        "t02": PlacementSource.NEVER_DEFER,
        "t03": PlacementSource.DEFAULT,
        "t05": PlacementSource.PROMOTION,
    }
    path = session.save(tmp_path / "s.json")
    saved = json.loads(path.read_text())["state"][KEY]["modes"]
    assert saved["t00"] == {"mode": "eager", "source": "rule", "detail": "rule 't00'"}
    assert saved["t05"] == {"mode": "eager", "source": "promotion", "detail": "promotion: search 'select:t05'"}
    resumed = rt.load_session(path)
    assert resumed.state[DeferralState].modes == modes


async def test_a_session_saved_before_sources_existed_resumes_with_them(make_runtime, tmp_path: Path) -> None:
    turns = [{"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "select:t05"}}]}, {"text": "ok"}]
    cfg = DeferredConfig(strategy="inject", enabled=True, rules=(Rule("t00", "eager"),), never_defer=("t02",))
    rt = make_runtime(turns, tools=make_tools(), plugins=[Priors(), DeferredToolsPlugin(cfg)])
    session = rt.session()
    await session.run("x")
    path = session.save(tmp_path / "s.json")
    data = json.loads(path.read_text())
    # the shape an older greenroom wrote: the reason in words, no source
    data["state"][KEY]["modes"] = {
        n: {"mode": p["mode"], "reason": p["detail"]} for n, p in data["state"][KEY]["modes"].items()
    }
    path.write_text(json.dumps(data))
    resumed = rt.load_session(path)
    assert resumed.state[DeferralState].modes == session.state[DeferralState].modes


async def test_retention_decides_on_the_source_not_the_words(make_runtime) -> None:
    cfg = DeferredConfig(strategy="inject", enabled=True, retention=RetentionConfig(gamma=50))
    rt = make_runtime([{"text": "ok"}], tools=make_tools(), plugins=[DeferredToolsPlugin(cfg)])
    session = rt.session()
    await rt.preview(session)
    st = session.state[DeferralState]
    # both idle since step 0; only the one a promotion placed may go back, whatever its words say
    st.modes["t03"] = Placement("eager", PlacementSource.RULE, "promotion: says the words")
    st.modes["t04"] = Placement("eager", PlacementSource.PROMOTION, "")
    for name in ("t03", "t04"):
        st.retention[name] = BetaState.from_prior(0.0001, cfg.retention, 0)
    st.step = 50
    await session.run("x")
    assert st.modes["t03"] == Placement("eager", PlacementSource.RULE, "promotion: says the words")
    assert st.modes["t04"].mode == "deferred" and st.modes["t04"].source is PlacementSource.RETENTION
    assert st.modes["t04"].detail.startswith("retention: idle 51 steps")


async def test_below_the_thresholds_the_source_says_inactive_except_for_always(make_runtime) -> None:
    tools = [*make_tools(3), tool(lambda q: q, name="secret", description="S.", deferrable="always")]
    rt = make_runtime(tools=tools, plugins=[DeferredToolsPlugin(DeferredConfig())])
    session = rt.session()
    await rt.preview(session)
    modes = session.state[DeferralState].modes
    assert modes["t00"] == Placement("eager", PlacementSource.INACTIVE, "inactive (5 tools < min_tools 15)")
    assert modes["secret"] == Placement("deferred", PlacementSource.POLICY_ALWAYS, "policy always")


async def test_inspect_reports_sources_through_the_hook_and_priors_say_prior(make_runtime) -> None:
    cfg = DeferredConfig(enabled=True, rules=(Rule("t00", "eager"),))
    rt = make_runtime(tools=make_tools(), plugins=[Priors(), DeferredToolsPlugin(cfg)])
    report = await inspect_runtime(rt)
    tools = {t["name"]: t for t in report["tools"]}
    assert (tools["t00"]["mode"], tools["t00"]["source"], tools["t00"]["reason"]) == ("eager", "rule", "rule 't00'")
    assert (tools["t01"]["mode"], tools["t01"]["source"]) == ("eager", "prior")
    assert tools["t01"]["reason"].startswith("prior: an eager set covering 90% of recent sessions")
    assert (tools["t02"]["mode"], tools["t02"]["source"], tools["t02"]["reason"]) == ("deferred", "default", "default")
    assert tools["ToolSearch"]["mode"] == "plugin" and tools["ToolSearch"]["source"] == "plugin"


async def test_inspect_counts_tools_left_to_a_hosted_search_as_deferred(make_runtime) -> None:
    from greenroom.providers.scripted import ScriptedModel

    class HostedSearchModel(ScriptedModel):
        native_tool_search = True

    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    tools = [tool(lambda q: q, name=f"n{i}", description="N.") for i in range(3)]
    for t in tools:
        t._descriptor = ToolDescriptor(t.descriptor.name, "N.", params)
    plugin = DeferredToolsPlugin(DeferredConfig(strategy="native", enabled=True, never_defer=("n0",)))
    rt = make_runtime(model=HostedSearchModel([]), tools=tools, plugins=[plugin])
    report = await inspect_runtime(rt)
    modes = {t["name"]: t["mode"] for t in report["tools"] if t["name"].startswith("n")}
    assert modes == {"n0": "eager", "n1": "deferred", "n2": "deferred"}  # all sent, two for the provider to find
    n0 = next(t["tokens"] for t in report["tools"] if t["name"] == "n0")
    assert report["totals"]["sent_tools_tokens"] == n0


def test_a_snapshot_of_the_state_is_independent_of_the_state_it_copies() -> None:
    """A run's snapshot (a deep copy) must not change when the session goes on: every
    container is copied, and every mutable value in one, whatever fields the state has."""
    st = DeferralState(
        modes={"a": Placement("deferred", PlacementSource.DEFAULT)},
        discovered=["a"],
        retention={"a": BetaState(1.0, 2.0)},
        expansion={"g": ["a"], "h": None},
        native_order=["a"],
        listing="text",
    )
    snap = copy.deepcopy(st)
    assert snap == st
    for field in attrs.fields(DeferralState):
        value = getattr(st, field.name)
        if isinstance(value, list | dict):
            assert getattr(snap, field.name) is not value, field.name
    st.place("b", Placement("eager", PlacementSource.RULE))
    st.discovered.append("b")
    st.retention["a"].observe(True, 0.5, 3)
    st.expansion["g"].append("b")  # type: ignore[union-attr]
    st.native_order.append("b")
    assert snap.modes == {"a": Placement("deferred", PlacementSource.DEFAULT)}
    assert snap.discovered == ["a"] and snap.native_order == ["a"] and snap.expansion == {"g": ["a"], "h": None}
    assert snap.retention["a"] == BetaState(1.0, 2.0)


def test_discovered_membership_follows_the_list_however_it_changed() -> None:
    """``has_discovered`` is a set lookup (asked on every call), yet it answers for the
    list as it is: after ``discover``, a direct append, a replaced list, and a load."""
    from greenroom.config import converter

    st = DeferralState(discovered=["a"])
    assert st.has_discovered("a") and not st.has_discovered("b")
    assert st.discover("b") and not st.discover("b")
    assert st.discovered == ["a", "b"]
    st.discovered.append("c")
    assert st.has_discovered("c")
    st.discovered = ["c"]
    assert not st.has_discovered("a") and st.has_discovered("c")
    saved = converter.unstructure(st)
    assert "_known" not in saved and "known" not in saved  # the set is derived, never saved
    loaded = converter.structure(json.loads(json.dumps(saved)), DeferralState)
    assert loaded.discovered == ["c"] and loaded.has_discovered("c") and not loaded.has_discovered("a")
