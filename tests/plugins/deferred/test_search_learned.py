"""Search that learning cannot hide from: a tool learned eager is still found (named as
already available, its schema not repeated); a tool named exactly comes first; a query
with no confident match says so and points at the nearest groups; a keyword search's
schemas stay within their share of the budget; the run keeps its searches, so the ones
that found nothing it used can be reported."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from greenroom import Plugin, ToolPriors, ToolUsage, hookimpl, tool
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin
from greenroom_ranking import RankingConfig, SearchRankingPlugin

pytestmark = pytest.mark.anyio

TOPICS = {
    "time": ("get_current_time", "convert_time", "list_timezones"),
    "weather": ("get_forecast", "get_alerts", "list_stations"),
    "email": ("send_message", "list_inbox", "delete_message"),
    "billing": ("create_invoice", "refund_payment", "list_invoices"),
    "github": ("create_issue", "list_pulls", "merge_pull"),
}
DESCRIPTIONS = {
    "time__get_current_time": "Get the current time in a timezone.",
    "time__convert_time": "Convert a time between two timezones.",
}


def make_tools(size: int = 10) -> list[Any]:
    out = []
    for group, verbs in TOPICS.items():
        for verb in verbs:
            name = f"{group}__{verb}"

            def impl(q: str = "", name: str = name) -> str:
                return f"{name}: {q}"

            words = " ".join(f"w{i}" for i in range(size))
            about = DESCRIPTIONS.get(name, f"{verb.replace('_', ' ').capitalize()} for {group}. {words}")
            out.append(tool(impl, name=name, description=about, group=group))
    return out


class Learned(Plugin):
    """What a store would load: most sessions call time__get_current_time alone."""

    name = "learned"
    nonblocking = True

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        sets = {frozenset({"time__get_current_time"}): 0.9}
        ctx.profile_state.set(ToolPriors(p={"time__get_current_time": 0.6}, sessions=30, loaded=True, sets=sets))


def search(query: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": query}}]}


async def answers(make_runtime: Any, *queries: str, plugins: tuple[Plugin, ...] = (), **cfg: Any) -> Any:
    turns = [*(search(q) for q in queries), {"text": "done"}]
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True, **cfg))
    rt = make_runtime(turns, tools=make_tools(), plugins=[*plugins, plugin])
    session = rt.session()
    await session.run("go")
    return session, [m.content for m in session.messages if m.role == "tool"]


def schemas(text: str) -> list[str]:
    return [json.loads(raw)["name"] for raw in re.findall(r"<function>(.*?)</function>", text)]


RANKERS = [(), (SearchRankingPlugin(RankingConfig()),)]


@pytest.mark.parametrize("ranking", RANKERS, ids=["keyword", "search-ranking"])
async def test_a_tool_learned_eager_is_still_found_by_search(make_runtime: Any, ranking: Any) -> None:
    session, (text,) = await answers(make_runtime, "current time", plugins=(Learned(), *ranking))
    st = session.state[DeferralState]
    assert st.modes["time__get_current_time"].mode == "eager"  # learning made it eager
    assert re.search(r"Already available \(in your tool list, call directly\): [^\n]*time__get_current_time", text)
    assert "time__get_current_time" not in schemas(text)  # its schema is in the tool list already
    assert "time__convert_time" in schemas(text)


async def test_a_tool_named_exactly_comes_first(make_runtime: Any) -> None:
    ranking = SearchRankingPlugin(RankingConfig())
    query = "merge pull request on github pulls list, then time__list_timezones"
    _, (text,) = await answers(make_runtime, query, plugins=(ranking,))
    assert schemas(text)[0] == "time__list_timezones"
    assert "github__merge_pull" in schemas(text)


async def test_no_confident_match_says_so_and_points_at_the_nearest_groups(make_runtime: Any) -> None:
    query = "book trains hotels museums restaurants concerts weather"
    _, (text,) = await answers(make_runtime, query)
    assert f"No confident match for {query!r}" in text
    assert 'Nearest groups: weather (3 tools); list one with ToolSearch "group:NAME".' in text
    assert schemas(text)  # the closest tools are still given
    # a query whose words the best match holds is taken at its word
    _, (sure,) = await answers(make_runtime, "convert time between timezones")
    assert "No confident match" not in sure and schemas(sure)[0] == "time__convert_time"


async def test_a_keyword_search_returns_schemas_within_its_share_of_the_budget(make_runtime: Any) -> None:
    _, (text,) = await answers(make_runtime, "list", listing_budget=400)  # 100 tokens of schemas
    given = schemas(text)
    assert 1 <= len(given) < 5
    more = re.search(r"More matches \(get their schemas with select:([\w,]+)\): ", text)
    assert more is not None and len(given) + len(more.group(1).split(",")) == 5


async def test_the_run_keeps_its_searches_and_which_found_nothing_it_used(make_runtime: Any) -> None:
    turns = [
        search("refund payment"),
        {"tool_calls": [{"name": "deferred_tool_call", "arguments": {"tool_name": "billing__refund_payment"}}]},
        search("quantum teleportation"),
        search("merge pull"),
        {"text": "done"},
    ]
    rt = make_runtime(turns, tools=make_tools(), plugins=[DeferredToolsPlugin(DeferredConfig(enabled=True))])
    session = rt.session()
    await session.run("go")
    assert session.last_snapshot is not None
    usage = session.last_snapshot[ToolUsage]
    assert [q for _, q, _ in usage.searches] == ["refund payment", "quantum teleportation", "merge pull"]
    failed = usage.failed_searches()
    assert [q for q, _ in failed] == ["quantum teleportation", "merge pull"]
    assert failed[0][1] == () and "github__merge_pull" in failed[1][1]
