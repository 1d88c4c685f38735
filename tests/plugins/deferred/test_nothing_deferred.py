"""ToolSearch when nothing is deferred (every tool eager: a small agent with ``enabled =
true`` and ``default_mode = "eager"``): a keyword or browse search answers, as a normal
result, that there is nothing to search, in every strategy and with every ranker; the
run goes on and the tools it names are called directly."""

from __future__ import annotations

from typing import Any

import pytest

from greenroom import Plugin, tool
from greenroom_deferred import DeferredConfig, DeferredToolsPlugin
from greenroom_deferred.answers import NOTHING_DEFERRED
from greenroom_deferred.events import SearchPerformed
from greenroom_ranking import BUILTIN_RANKERS, RankingConfig, SearchRankingPlugin
from greenroom_ranking.extra import missing_extra

pytestmark = pytest.mark.anyio

RANKERS = [r for r in BUILTIN_RANKERS if r != "embedding" or missing_extra() is None]


@tool
def weather_get(city: str) -> str:
    """Weather for a city."""
    return f"sunny in {city}"


@tool
def email_send(to: str) -> str:
    """Send an email."""
    return f"sent to {to}"


def search(query: str) -> dict[str, Any]:
    return {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": query}}]}


async def run(make_runtime: Any, strategy: str, ranking: list[Plugin], *turns: dict[str, Any]) -> Any:
    deferred = DeferredToolsPlugin(DeferredConfig(enabled=True, default_mode="eager", strategy=strategy))
    rt = make_runtime([*turns, {"text": "done"}], tools=[weather_get, email_send], plugins=[deferred, *ranking])
    events: list[Any] = []
    rt.events.subscribe(events.append)
    s = rt.session()
    outcome = await s.run("what is the weather in rome?")
    assert outcome.stop_reason == "final" and outcome.text == "done"
    return s, events, rt


@pytest.mark.parametrize("strategy", ["dispatch", "inject", "native"])
@pytest.mark.parametrize("ranker", [*RANKERS, "all", None])
async def test_a_search_with_nothing_deferred_says_so_as_a_normal_result(
    make_runtime: Any, strategy: str, ranker: str | None
) -> None:
    rankers = tuple(RANKERS) if ranker == "all" else (ranker,)
    ranking = [] if ranker is None else [SearchRankingPlugin(RankingConfig(rankers=rankers))]
    turns = (
        search("weather city"),
        search(""),
        {"tool_calls": [{"name": "weather_get", "arguments": {"city": "Rome"}}]},
    )
    s, events, rt = await run(make_runtime, strategy, ranking, *turns)
    keywords, browse, called = [m for m in s.messages if m.role == "tool"]
    for answer in (keywords, browse):
        assert not answer.is_error and answer.content == NOTHING_DEFERRED
    assert "no deferred tools to search" in NOTHING_DEFERRED and "already in your tool list" in NOTHING_DEFERRED
    assert called.content == "sunny in Rome"
    searches = [e for e in events if isinstance(e, SearchPerformed)]
    assert [(e.mode, e.results) for e in searches] == [("keywords", ()), ("browse", ())]
    assert {"weather_get", "email_send"} <= {t.name for t in rt.model.requests[0].tools}


async def test_select_still_answers_with_the_schemas_of_eager_tools(make_runtime: Any) -> None:
    s, _, _ = await run(make_runtime, "dispatch", [], search("select:weather_get,nope"), search("select:nope"))
    found, missing = [m for m in s.messages if m.role == "tool"]
    assert '"name": "weather_get"' in found.content and "Not found: nope." in found.content
    assert (
        missing.content
        == "No tools matched select nope. No tool is deferred: every tool you can use is in your tool list."
    )
