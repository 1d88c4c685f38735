"""100,000 tools with default settings: the listing stays within its budget and still shows
the catalog's structure (every group with a count, names spread across groups, the
likeliest first); ToolSearch (keywords, ``group:NAME``, ``select:``), load_tools,
misspelled names and every strategy work, and nothing is token-counted whole."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from support.scale_testutil import scale_catalog

from greenroom import ToolDescriptor, count_tokens
from greenroom.models import ModelRequest
from greenroom.providers.scripted import ScriptedModel
from greenroom.tools.catalog import CatalogTool
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.listing import budgeted_listing

pytestmark = pytest.mark.anyio
SIZE = 100_000
BUDGET = DeferredConfig().listing_budget


def groups_of(tools: tuple[ToolDescriptor, ...]) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for d in tools:
        out.setdefault(d.group or "", []).append(d.name)
    return out


def test_the_listing_of_100k_tools_fits_its_budget_and_shows_every_group() -> None:
    tools = scale_catalog(SIZE)
    liked = tools[12_345].name
    text = budgeted_listing(tools, style="descriptions", budget=BUDGET, hint="Search.", priority={liked: 0.9})
    assert count_tokens(text) <= BUDGET
    by_group = groups_of(tools)
    for group, names in by_group.items():
        assert f"- {group} ({len(names)} tools)" in text  # structure, with counts
    words = set(re.findall(r"[\w-]+", text))
    shown = {g: sum(1 for n in names if n in words) for g, names in by_group.items()}
    assert all(count >= 1 for count in shown.values()), "every group shows some of its names"
    assert sum(shown.values()) > 300  # as many names as fit, not a bare count
    assert liked in text  # what priors say is used comes first
    assert "group:NAME" in text


def test_a_budget_too_small_for_every_group_shows_the_largest_and_says_how_many_more() -> None:
    tools = scale_catalog(SIZE)
    text = budgeted_listing(tools, style="names", budget=300, hint="Search.")
    assert count_tokens(text) <= 300
    assert re.search(r"\.\.\. and \d+ more groups with \d+ tools", text)
    assert re.search(r"- seal_tools_r\d+ \(4076 tools\)", text)


def test_a_small_catalog_is_listed_whole_as_before() -> None:
    tools = scale_catalog(50)
    text = budgeted_listing(tools, style="descriptions", budget=BUDGET, hint="Search.")
    assert "<available-deferred-tools>" in text
    assert all(d.name in text for d in tools)


class Native(ScriptedModel):
    native_tool_search = True


def turns() -> list[dict[str, Any]]:
    def call(i: str, name: str, **args: Any) -> dict[str, Any]:
        return {"id": i, "name": name, "arguments": args}

    return [
        {
            "tool_calls": [
                call("kw", "ToolSearch", query="analyze chemical evidence from a crime scene"),
                call("group", "ToolSearch", query="group:metatool_r7"),
                call("nogroup", "ToolSearch", query="group:nowhere"),
                call("select", "ToolSearch", query="select:analyzeEvidence_r7"),
                call("miss", "analyzeEvidense_r7", evidence_type="DNA"),
            ]
        },
        {"text": "done"},
    ]


@pytest.mark.parametrize("strategy", ["dispatch", "inject", "native"])
async def test_a_run_over_100k_tools_works_with_every_strategy(make_runtime: Any, strategy: str) -> None:
    tools = [CatalogTool(d, "scale") for d in scale_catalog(SIZE)]
    model = (Native if strategy == "native" else ScriptedModel)(turns())
    plugin = DeferredToolsPlugin(DeferredConfig(strategy=strategy))  # type: ignore[arg-type]
    rt = make_runtime(model=model, tools=tools, plugins=[plugin])
    session = rt.session()
    outcome = await rt.run(session, "find the evidence tool")
    assert outcome.stop_reason == "final", outcome.error
    first: ModelRequest = model.requests[0]
    assert len(first.tools) < 10 or strategy == "native"
    assert count_tokens(first.system_text) <= BUDGET + 200
    results = {m.tool_call_id: m.content for m in session.messages if m.role == "tool"}
    if strategy == "native":
        # the provider searches them on its side: every usable tool (the dataset's few
        # schemas that JSON Schema rejects are never sent, whatever the strategy)
        usable = {d.name for d in rt.tools.descriptors()}
        assert len(usable) > SIZE - 200
        assert len(first.deferred) >= len(usable) - 10 and first.deferred <= usable
        return
    assert "analyzeEvidence_r" in results["kw"]
    assert results["group"].startswith("Group metatool_r7: 199 tools.") and '"parameters"' not in results["group"]
    assert "There is no group 'nowhere'" in results["nogroup"]
    assert json.dumps("analyzeEvidence_r7")[1:-1] in results["select"] and '"parameters"' in results["select"]
    assert "Did you mean: analyzeEvidence_r7" in results["miss"]


def test_names_priors_favour_are_shown_with_their_groups_when_not_every_group_fits() -> None:
    """Thousands of small groups (one per server, say) cannot all have a line; the tools
    learned usage says are likely keep their place, and their groups' lines with them."""
    tools = tuple(
        ToolDescriptor(f"server{g:04d}__action_{i}", "Does a thing.", group=f"server{g:04d}")
        for g in range(3_000)
        for i in range(8)
    )
    liked = {tools[8 * 2_345 + 3].name: 0.9, tools[8 * 17 + 5].name: 0.7, tools[8 * 2_999].name: 0.5}
    text = budgeted_listing(tools, style="names", budget=BUDGET, hint="Search.", priority=liked)
    assert count_tokens(text) <= BUDGET
    assert re.search(r"\.\.\. and \d+ more groups with \d+ tools", text)  # not every group fits
    for name in liked:
        assert name in text
        group = name.split("__")[0]
        assert f"- {group} (8 tools)" in text
    # without priors the same budget shows the groups' lines, and names only if room is left
    plain = budgeted_listing(tools, style="names", budget=BUDGET, hint="Search.")
    assert not any(name in plain for name in liked)


async def test_at_100k_tools_learning_stays_within_the_one_budget_and_shrinks_the_listing(make_runtime: Any) -> None:
    """What greenroom adds to the prefix (the listing and the learned eager schemas) stays
    within ``listing_budget`` with priors too, and a learned set that covers most sessions
    gives its room back: the listing shrinks."""
    from greenroom import Plugin, ToolPriors, hookimpl
    from greenroom.kit import descriptor_costs

    descriptors = scale_catalog(SIZE)
    tools = [CatalogTool(d, "scale") for d in descriptors]
    habit = frozenset(d.name for d in descriptors[1000:1006])

    class Learned(Plugin):
        name = "learned"
        nonblocking = True

        @hookimpl(tryfirst=True)
        def greenroom_run_start(self, ctx: Any) -> None:
            ctx.profile_state.set(ToolPriors(p=dict.fromkeys(habit, 0.3), sessions=40, loaded=True, sets={habit: 0.9}))

    sent = {}
    for plugins in ([], [Learned()]):
        rt = make_runtime(tools=tools, plugins=[*plugins, DeferredToolsPlugin(DeferredConfig())])
        sent[bool(plugins)] = await rt.preview(rt.session())
    plain, learned = sent[False], sent[True]
    assert count_tokens(plain.system_text) <= BUDGET + 200  # the agent's own prompt aside
    eager = [d for d in learned.tools if d.name in habit]
    assert {d.name for d in eager} == habit
    added = sum(descriptor_costs(eager, "definition_tokens")) + count_tokens(learned.system_text)
    assert added <= BUDGET + 200
    assert count_tokens(learned.system_text) < count_tokens(plain.system_text) / 3
