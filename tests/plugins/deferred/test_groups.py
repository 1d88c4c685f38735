"""Tool groups: the catalog section, load_tools, implicit loads, expansion state,
resume without re-running loaders, forks, and search inside unloaded groups."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenroom import ToolDescriptor, tool
from greenroom.config import AgentConfig
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom.run.runtime import Runtime
from greenroom.tools.groups import ToolGroup
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin

PARAMS = {"type": "object", "properties": {"id": {"type": "string"}}, "required": ["id"], "additionalProperties": False}


def billing_tools() -> list[Any]:
    out = []
    for name in ("billing_refund", "billing_invoice", "billing_extra"):

        def impl(id: str, _n: str = name) -> str:
            return f"{_n}:{id}"

        t = tool(impl, name=name, description=f"{name.split('_')[1].capitalize()} a billing record.")
        t._descriptor = ToolDescriptor(name, t.descriptor.description, PARAMS)
        out.append(t)
    return out


class Loader:
    def __init__(self, fail_times: int = 0) -> None:
        self.calls = 0
        self.fail_times = fail_times

    async def __call__(self) -> list[Any]:
        self.calls += 1
        if self.calls <= self.fail_times:
            raise ConnectionError("billing backend unreachable")
        return billing_tools()


def make(turns: list[dict[str, Any]], loader: Loader, **cfg: Any) -> Runtime:
    known = [
        ToolDescriptor(n, f"{n.split('_')[1].capitalize()} a billing record.", PARAMS)
        for n in ("billing_refund", "billing_invoice")
    ]  # billing_extra is not declared
    group = ToolGroup("billing", "Billing", "Invoices and refunds.", loader, known=known)
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True, **cfg))
    echo = tool(lambda text: text, name="echo", description="Echo.")
    return Runtime(
        model=ScriptedModel(turns),
        tools=[echo],
        groups=[group],
        host=make_plugin_host(records=[], extra=[plugin]),
        agent=AgentConfig(max_steps=12),
    )


def load(group: str, names: list[str] | None = None) -> dict[str, Any]:
    args: dict[str, Any] = {"group_id": group}
    if names is not None:
        args["tool_names"] = names
    return {"tool_calls": [{"name": "load_tools", "arguments": args}]}


def call(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": name, "arguments": args}}]}


def tool_results(session: Any) -> list[Any]:
    return [m for m in session.messages if m.role == "tool"]


@pytest.mark.anyio
async def test_catalog_lists_groups_and_load_tools_is_idempotent() -> None:
    loader = Loader()
    rt = make([load("billing"), load("billing"), {"text": "ok"}], loader)
    s = rt.session()
    await s.run("x")
    system = rt.model.requests[0].system_text
    assert "- `billing` — Billing: Invoices and refunds. (2 tools)" in system
    assert "billing_refund, billing_invoice" in system
    first, second = tool_results(s)
    assert first.content == second.content  # byte-identical: recovers after compaction
    body = json.loads(first.content)
    assert list(body) == sorted(body)
    assert body["group_id"] == "billing" and body["expanded"] is True and body["remaining"] == 0
    assert body["tool_names"] == ["billing_extra", "billing_invoice", "billing_refund"]
    assert [sch["name"] for sch in body["schemas"]] == body["tool_names"]
    assert loader.calls == 1
    assert s.state[DeferralState].expansion == {"billing": None}
    # the prefix never changed while the group loaded
    first_request = rt.model.requests[0]
    assert all(r.tools == first_request.tools and r.system == first_request.system for r in rt.model.requests)


@pytest.mark.anyio
async def test_partial_load_then_the_rest() -> None:
    rt = make(
        [load("billing", ["billing_refund"]), load("billing", ["billing_invoice", "nope"]), {"text": "ok"}], Loader()
    )
    s = rt.session()
    await s.run("x")
    partial, more = (json.loads(m.content) for m in tool_results(s))
    assert partial["tool_names"] == ["billing_refund"] and partial["remaining"] == 2 and not partial["expanded"]
    assert more["tool_names"] == ["billing_invoice"] and "nope" in more["error"]
    assert s.state[DeferralState].expansion == {"billing": ["billing_invoice", "billing_refund"]}


@pytest.mark.anyio
async def test_unknown_group_and_loader_failure_can_be_retried() -> None:
    loader = Loader(fail_times=1)
    rt = make([load("payroll"), load("billing"), load("billing"), {"text": "ok"}], loader)
    s = rt.session()
    await s.run("x")
    unknown, failed, retried = tool_results(s)
    assert unknown.is_error and "unknown group 'payroll'; available: billing" in unknown.content
    assert failed.is_error and "billing backend unreachable" in failed.content
    assert not retried.is_error and loader.calls == 2


@pytest.mark.anyio
async def test_calling_a_tool_of_an_unloaded_group_loads_it_implicitly() -> None:
    loader = Loader()
    rt = make(
        [
            call("billing_refund", {"id": "r1"}),
            call("billing_extra", {"id": "e1"}),
            call("billing_invoice", {"wrong": 1}),
            {"text": "ok"},
        ],
        loader,
    )
    s = rt.session()
    await s.run("x")
    refund, extra, invalid = tool_results(s)
    assert refund.content == "billing_refund:r1"
    assert extra.content == "billing_extra:e1"  # not declared in the catalog, still dispatchable
    assert invalid.is_error and "'id' is a required property" in invalid.content
    assert '"required": ["id"]' in invalid.content  # the full schema comes back
    assert loader.calls == 1


@pytest.mark.anyio
async def test_search_finds_tools_inside_unloaded_groups() -> None:
    loader = Loader()
    rt = make(
        [{"tool_calls": [{"name": "ToolSearch", "arguments": {"query": "refund billing"}}]}, {"text": "ok"}], loader
    )
    s = rt.session()
    await s.run("x")
    (found,) = tool_results(s)
    assert '"name": "billing_refund"' in found.content
    assert loader.calls == 0  # searching does not load


@pytest.mark.anyio
async def test_resume_keeps_expansion_without_rerunning_loaders(tmp_path) -> None:
    loader = Loader()
    rt = make([load("billing"), {"text": "ok"}], loader)
    s = rt.session()
    await s.run("x")
    path = s.save(tmp_path / "s.json")

    fresh_loader = Loader()
    rt2 = make([{"text": "resumed"}, call("billing_refund", {"id": "r"}), {"text": "done"}], fresh_loader)
    resumed = rt2.load_session(path)
    assert resumed.state[DeferralState].expansion == {"billing": None}
    await resumed.run("anything new?")
    assert fresh_loader.calls == 0  # nothing needed the group yet
    await resumed.run("refund r")
    assert fresh_loader.calls == 1 and tool_results(resumed)[-1].content == "billing_refund:r"


@pytest.mark.anyio
async def test_a_forked_sub_agent_inherits_what_its_parent_loaded() -> None:
    rt = make([load("billing"), {"text": "ok"}, {"text": "child"}], Loader())
    parent = rt.session()
    await parent.run("x")
    child = parent.fork()
    assert child.state[DeferralState].expansion == {"billing": None}
    assert child.state[DeferralState].discovered == parent.state[DeferralState].discovered


@pytest.mark.anyio
async def test_inject_strategy_adds_loaded_group_tools_to_the_tools_array() -> None:
    rt = make(
        [
            load("billing", ["billing_refund"]),
            {"tool_calls": [{"name": "billing_refund", "arguments": {"id": "z"}}]},
            {"text": "ok"},
        ],
        Loader(),
        strategy="inject",
    )
    s = rt.session()
    await s.run("x")
    first, second, _ = rt.model.requests
    assert "billing_refund" not in [t.name for t in first.tools]
    assert "billing_refund" in [t.name for t in second.tools]
    body = json.loads(tool_results(s)[0].content)
    assert "schemas" not in body  # inject: the schema arrives in the tools array instead
    assert tool_results(s)[1].content == "billing_refund:z"


@pytest.mark.anyio
async def test_groups_from_config_with_a_python_loader(tmp_path) -> None:
    from greenroom.compose.build import build_runtime

    (tmp_path / "weather.py").write_text(
        "from greenroom import tool\n\n"
        "def load():\n"
        "    @tool\n"
        "    def forecast(city: str) -> str:\n"
        '        """Forecast for a city."""\n'
        "        return f'sunny in {city}'\n"
        "    return [forecast]\n"
    )
    (tmp_path / "agent.toml").write_text(
        "[[tools.groups]]\n"
        'id = "weather"\nloader = "weather.py:load"\ndescription = "Forecasts."\ntools = ["forecast"]\n'
        "[plugins.deferred-tools]\nenabled = true\n"
    )
    turns = [call("forecast", {"city": "Oslo"}), {"text": "ok"}]
    from greenroom.plugins.discovery import discover

    records = [r for r in discover() if r.name == "deferred-tools"]
    rt = build_runtime(tmp_path / "agent.toml", model=ScriptedModel(turns), records=records)
    s = rt.session()
    await s.run("x")
    assert tool_results(s)[0].content == "sunny in Oslo"
    assert "- `weather` — weather: Forecasts. (1 tools)" in rt.model.requests[0].system_text


@pytest.mark.anyio
async def test_inject_resume_keeps_promoted_group_tools_before_the_loader_runs_again(tmp_path) -> None:
    rt = make([load("billing", ["billing_refund"]), {"text": "ok"}], Loader(), strategy="inject")
    s = rt.session()
    await s.run("x")
    path = s.save(tmp_path / "s.json")

    fresh_loader = Loader()
    turns = [{"tool_calls": [{"name": "billing_refund", "arguments": {"id": "q"}}]}, {"text": "done"}]
    rt2 = make(turns, fresh_loader, strategy="inject")
    resumed = rt2.load_session(path)
    await resumed.run("refund q")
    first = rt2.model.requests[0]
    refund = next(t for t in first.tools if t.name == "billing_refund")
    assert refund.parameters == PARAMS  # the real schema, from the catalog, before any load
    assert "billing_invoice" not in [t.name for t in first.tools]  # never promoted
    assert fresh_loader.calls == 1  # the direct call loaded the group
    assert tool_results(resumed)[-1].content == "billing_refund:q"


def test_two_groups_with_one_id_are_rejected() -> None:
    from greenroom.tools.toolset import DuplicateToolError

    groups = [ToolGroup("billing", "Billing", "", Loader()), ToolGroup("billing", "Billing 2", "", Loader())]
    with pytest.raises(DuplicateToolError, match="'billing'"):
        Runtime(model=ScriptedModel([]), groups=groups, host=make_plugin_host(records=[], extra=[]))


def test_a_user_tool_named_like_a_plugin_tool_is_a_clear_error() -> None:
    from greenroom.tools.toolset import DuplicateToolError

    clash = tool(lambda group_id: group_id, name="load_tools", description="Mine.")
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True))
    with pytest.raises(DuplicateToolError, match=r"a plugin adds a tool named 'load_tools'.*naming = \"prefixed\""):
        Runtime(
            model=ScriptedModel([]),
            tools=[clash],
            groups=[ToolGroup("billing", "Billing", "", Loader())],
            host=make_plugin_host(records=[], extra=[plugin]),
        )


@pytest.mark.anyio
async def test_only_the_tools_of_deferring_groups_are_placed_as_group_tools() -> None:
    from greenroom_deferred import PlacementSource

    def descriptors(prefix: str) -> list[ToolDescriptor]:
        return [ToolDescriptor(f"{prefix}_{n}", f"{n.capitalize()} a {prefix} record.", PARAMS) for n in ("get", "put")]

    deferring = ToolGroup("billing", "Billing", "Invoices.", Loader(), known=descriptors("billing"))
    eager = ToolGroup("crm", "CRM", "Contacts.", Loader(), known=descriptors("crm"), defer=False)
    loose = [tool(lambda text: text, name=f"echo{i}", description="Echo.") for i in range(3)]
    rt = Runtime(
        model=ScriptedModel([{"text": "ok"}]),
        tools=loose,
        groups=[deferring, eager],
        host=make_plugin_host(
            records=[], extra=[DeferredToolsPlugin(DeferredConfig(enabled=True, default_mode="eager"))]
        ),
        agent=AgentConfig(max_steps=2),
    )
    session = rt.session()
    request = await rt.preview(session)
    modes = session.state[DeferralState].modes
    assert {n: (p.mode, p.source) for n, p in modes.items() if n.startswith(("billing", "crm"))} == {
        "billing_get": ("deferred", PlacementSource.GROUP),
        "billing_put": ("deferred", PlacementSource.GROUP),
        "crm_get": ("eager", PlacementSource.DEFAULT),
        "crm_put": ("eager", PlacementSource.DEFAULT),
    }
    # the group section names every group's tools, so no tool of either is listed again
    assert request.system_text.count("billing_get") == 1 and request.system_text.count("crm_get") == 1
    assert {"crm_get", "crm_put"} <= {d.name for d in request.tools}
