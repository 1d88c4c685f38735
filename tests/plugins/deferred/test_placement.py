"""Placement: rules, globs, policies, never_defer, and the activation thresholds."""

from __future__ import annotations

import json
from typing import Any

import pytest

from greenroom import ToolDescriptor
from greenroom._support.globs import GlobError, check_glob, matches
from greenroom.config import ConfigError, load_config
from greenroom.tools import CatalogTool
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin, Placement, PlacementSource, Rule


def catalog_tool(name: str, size: int = 400, **kw: Any) -> CatalogTool:
    words = " ".join(f"word{i}" for i in range(size // 6))  # realistic text: about one token a word
    params = {"type": "object", "properties": {"q": {"type": "string", "description": words}}}
    return CatalogTool(ToolDescriptor(name, f"Tool {name}.", params, **kw), "test")


async def placement(make_runtime, tools, **cfg) -> DeferralState:
    rt = make_runtime(tools=tools, plugins=[DeferredToolsPlugin(DeferredConfig(**cfg))])
    session = rt.session()
    await rt.preview(session)
    return session.state[DeferralState]


@pytest.mark.parametrize(
    ("pattern", "name", "hit"),
    [
        ("github_*", "github_create_issue", True),
        ("github_*", "my_github_x", False),  # anchored to the whole name
        ("GitHub_*", "github_x", False),  # case-sensitive
        ("get_?", "get_a", True),
        ("get_?", "get_ab", False),
        ("[ab]_x", "b_x", True),
        ("{slack,jira}_*", "jira_list", True),
        ("{slack,jira}_*", "email_send", False),
        ("exact_name", "exact_name", True),
    ],
)
def test_globs(pattern: str, name: str, hit: bool) -> None:
    assert matches(pattern, name) is hit


@pytest.mark.parametrize("bad", ["[abc", "{a,b", "a}", ""])
def test_bad_globs_are_rejected(bad: str) -> None:
    with pytest.raises(GlobError):
        check_glob(bad)


def test_bad_glob_in_config_names_the_rule(tmp_path) -> None:
    from greenroom.compose.build import plugin_configs
    from greenroom.plugins.discovery import PluginRecord

    cfg_file = tmp_path / "a.toml"
    cfg_file.write_text(
        '[plugins.deferred-tools]\nrules = [{tool = "a*", mode = "eager"}, {tool = "b{x", mode = "eager"}]\n'
    )
    rec = PluginRecord("deferred-tools", "greenroom", "0", "x", cls=DeferredToolsPlugin)
    cfg = load_config(cfg_file, plugin_schemas={"deferred-tools": DeferredToolsPlugin.config_schema()})
    with pytest.raises(
        ConfigError, match=r"a\.toml: plugins\.deferred-tools\.rules\[1\]: .*unclosed '\{' in tool pattern 'b\{x'"
    ):
        plugin_configs(cfg, [rec])


@pytest.mark.anyio
async def test_first_matching_rule_wins_then_default(make_runtime) -> None:
    tools = [catalog_tool(n) for n in ("github_get", "github_admin_delete", "slack_post", "jira_x")] + [
        catalog_tool(f"filler_{i}") for i in range(15)
    ]
    st = await placement(
        make_runtime,
        tools,
        rules=(Rule("github_admin_*", "deferred"), Rule("github_*", "eager"), Rule("slack_post", "eager")),
    )
    assert st.active
    assert st.modes["github_get"].mode == "eager" and st.modes["github_get"].reason == "rule 'github_*'"
    assert st.modes["github_admin_delete"].mode == "deferred"
    assert st.modes["slack_post"].mode == "eager"
    assert st.modes["jira_x"].mode == "deferred" and st.modes["jira_x"].reason == "default"
    assert (
        st.modes["github_get"].source is PlacementSource.RULE and st.modes["jira_x"].source is PlacementSource.DEFAULT
    )


@pytest.mark.anyio
async def test_policies_and_never_defer(make_runtime) -> None:
    tools = [
        catalog_tool("pinned", deferrable="never"),
        catalog_tool("hidden_always", deferrable="always"),
        catalog_tool("listed"),
    ] + [catalog_tool(f"filler_{i}") for i in range(15)]
    st = await placement(make_runtime, tools, never_defer=("listed",), rules=(Rule("*", "deferred"),))
    assert st.modes["pinned"] == Placement("eager", PlacementSource.POLICY_NEVER, "policy never")
    assert st.modes["hidden_always"].mode == "deferred"
    assert st.modes["listed"].reason == "never_defer"
    assert st.modes["listed"].source is PlacementSource.NEVER_DEFER
    assert st.modes["hidden_always"].source is PlacementSource.POLICY_ALWAYS


@pytest.mark.anyio
async def test_below_min_tools_nothing_changes_except_always(make_runtime) -> None:
    tools = [catalog_tool(f"t{i}") for i in range(5)] + [catalog_tool("secret", deferrable="always")]
    rt = make_runtime([{"text": "ok"}], tools=tools, plugins=[DeferredToolsPlugin(DeferredConfig())])
    session = rt.session()
    await session.run("x")
    st = session.state[DeferralState]
    assert not st.active and "min_tools 15" in st.activation
    sent = {t.name for t in rt.model.requests[0].tools}
    assert {f"t{i}" for i in range(5)} <= sent and "secret" not in sent  # "always" really defers
    assert "ToolSearch" in sent


def padded_tool(name: str, chars4_savings: int) -> CatalogTool:
    """A tool whose chars/4 savings are exactly ``chars4_savings`` (name of 4 chars: c_bar = 1)."""
    assert len(name) == 4
    target = (chars4_savings + 1) * 4  # c = len(params)/4 = savings + c_bar
    params: dict[str, Any] = {"type": "object", "description": ""}
    base = len(json.dumps(params, separators=(",", ":")))
    params["description"] = "x" * (target - base)
    assert len(json.dumps(params, separators=(",", ":"))) == target
    return CatalogTool(ToolDescriptor(name, "padded", params), "test")


@pytest.mark.anyio
@pytest.mark.parametrize(("savings", "active"), [(1136, False), (1137, True)])
async def test_savings_threshold_is_strictly_greater(make_runtime, savings: int, active: bool) -> None:
    st = await placement(make_runtime, [padded_tool("tool", savings)], min_tools=0, savings_measure="chars4")
    assert st.savings_chars4 == savings
    assert st.active is active
    assert st.savings_tokens > 0  # exact-token savings are reported as well


@pytest.mark.anyio
@pytest.mark.parametrize(("count", "active"), [(13, False), (14, True)])
async def test_min_tools_counts_tool_search_too(make_runtime, count: int, active: bool) -> None:
    tools = [catalog_tool(f"t{i:02d}") for i in range(count)]  # + ToolSearch = count + 1
    st = await placement(make_runtime, tools, beta_overhead=0)
    assert st.active is active


@pytest.mark.anyio
async def test_enabled_true_and_false_override_thresholds(make_runtime) -> None:
    few = [catalog_tool("aaaa"), catalog_tool("bbbb")]
    assert (await placement(make_runtime, few, enabled=True)).active
    many = [catalog_tool(f"t{i}", size=3000) for i in range(30)]
    st = await placement(make_runtime, many, enabled=False)
    assert not st.active and st.deferred() == []


@pytest.mark.anyio
async def test_learned_priors_start_frequent_tools_eager(make_runtime) -> None:
    from greenroom import Plugin, ToolPriors, hookimpl

    class Priors(Plugin):
        name = "fake-priors"

        @hookimpl(tryfirst=True)
        def greenroom_run_start(self, ctx: Any) -> None:
            ctx.profile_state.set(
                ToolPriors(p={"t01": 0.6, "t02": 0.001}, sessions=3, loaded=True, sets={frozenset({"t01"}): 0.6})
            )

    tools = [catalog_tool(f"t{i:02d}") for i in range(20)]
    rt = make_runtime(tools=tools, plugins=[Priors(), DeferredToolsPlugin(DeferredConfig())])
    session = rt.session()
    await rt.preview(session)
    st = session.state[DeferralState]
    assert st.modes["t01"].mode == "eager" and st.modes["t01"].reason.startswith("prior: an eager set covering 60%")
    assert st.modes["t01"].source is PlacementSource.PRIOR
    assert st.modes["t02"].mode == "deferred"


@pytest.mark.anyio
@pytest.mark.parametrize("cfg", [{"enabled": False}, {"min_tools": 50}])
async def test_an_inactive_plugin_sends_every_schema_as_is_and_none_of_its_own(make_runtime, cfg) -> None:
    tools = [catalog_tool(f"t{i:02d}") for i in range(20)]
    rt = make_runtime(tools=tools, plugins=[DeferredToolsPlugin(DeferredConfig(**cfg))])
    request = await rt.preview(rt.session())
    assert [t.name for t in request.tools] == [t.descriptor.name for t in tools]
    assert [t.parameters for t in request.tools] == [t.descriptor.parameters for t in tools]


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("p", "cfg", "listed"),
    [
        ({}, {}, [f"t{i:02d}" for i in range(20)]),  # active: every tool deferred
        ({"t01": 0.6, "t05": 0.7}, {}, [f"t{i:02d}" for i in range(20) if i not in (1, 5)]),  # priors start two eager
        ({}, {"min_tools": 50}, ["t03"]),  # inactive: only the owner's "always" stays deferred
        ({"t07": 0.6}, {"enabled": False}, ["t03"]),
    ],
)
async def test_the_listing_names_exactly_the_tools_placed_deferred(make_runtime, p, cfg, listed) -> None:
    from greenroom import Plugin, ToolPriors, hookimpl
    from greenroom_deferred.listing import SECTION_KEY

    class Priors(Plugin):
        name = "fake-priors"

        @hookimpl(tryfirst=True)
        def greenroom_run_start(self, ctx: Any) -> None:
            ctx.profile_state.set(
                ToolPriors(p=p, sessions=3, loaded=bool(p), sets={frozenset({n}): w for n, w in p.items()})
            )

    tools = [catalog_tool(f"t{i:02d}", deferrable="always" if i == 3 else "automatic") for i in range(20)]
    rt = make_runtime(tools=tools, plugins=[Priors(), DeferredToolsPlugin(DeferredConfig(**cfg))])
    session = rt.session()
    request = await rt.preview(session)
    st = session.state[DeferralState]
    assert st.deferred() == listed
    (section,) = [s for s in request.system if s.key == SECTION_KEY]
    assert [line.split(" - ")[0] for line in section.text.splitlines() if line.startswith("t")] == listed
    sent = [d.name for d in request.tools]
    assert not set(listed) & set(sent) and set(st.eager()) <= set(sent)


@pytest.mark.anyio
async def test_the_listing_of_small_tools_costs_at_most_a_quarter_of_their_schemas(make_runtime) -> None:
    from greenroom import count_tokens
    from greenroom.kit import descriptor_costs
    from greenroom_deferred.listing import SECTION_KEY

    # 200 tools whose descriptions are most of what they are (like metatool's plugins)
    params = {"type": "object", "properties": {"q": {"type": "string"}}}
    about = "Helps with {} and everything around it, for anyone who asks about it."
    tools = [CatalogTool(ToolDescriptor(f"Helper{i:03d}", about.format(f"topic {i}"), params), "t") for i in range(200)]
    rt = make_runtime(tools=tools, plugins=[DeferredToolsPlugin(DeferredConfig(enabled=True))])
    request = await rt.preview(rt.session())
    (section,) = [s for s in request.system if s.key == SECTION_KEY]
    schemas = sum(descriptor_costs([t.descriptor for t in tools], "definition_tokens"))
    assert count_tokens(section.text) <= schemas / 4
    assert all(t.descriptor.name in section.text for t in tools)  # by name: they fit
