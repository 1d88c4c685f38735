"""search-ranking at scale and the candidates contract: 100,000 tools ranked in seconds,
the same candidates list reused at no cost, a list changed in place still seen as changed."""

from __future__ import annotations

import anyio
import attrs

from greenroom import SearchQuery, ToolDescriptor
from greenroom_ranking import RankingConfig, RankingEngine, SearchRankingPlugin

WORDS = "alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo lima mike november oscar papa".split()


def big_catalog(n: int) -> list[ToolDescriptor]:
    """``n`` tools: ``<word><Word>_<i>`` names, three-word descriptions, one parameter."""
    k = len(WORDS)
    return [
        ToolDescriptor(
            f"{WORDS[i % k]}{WORDS[i // k % k].title()}_{i}",
            f"{WORDS[i // 7 % k]} {WORDS[i // 11 % k]} {WORDS[i // 13 % k]} number {i}",
            {"type": "object", "properties": {f"{WORDS[i // 3 % k]}_id": {"type": "string"}}},
        )
        for i in range(n)
    ]


def names(results: list) -> list[str]:  # type: ignore[type-arg]
    return [s.name for s in results]


def test_a_100k_tool_catalog_is_searched_through_the_hooks() -> None:
    tools = big_catalog(100_000)
    deferred = tools[1000:]  # the still-deferred tools, one list for the whole run
    plugin = SearchRankingPlugin()

    async def search(text: str, candidates: list[ToolDescriptor]) -> list[str]:
        query = SearchQuery.parse(text, max_results=5)
        ranking = await plugin.greenroom_rank_tools(None, query, candidates)
        found = plugin.greenroom_search_tools(None, query, candidates, [ranking] if ranking else [])
        return names(found or [])

    async def scenario() -> None:
        exact = tools[54_321].name
        assert (await search(exact, deferred))[0] == exact  # the whole query is a name: +100
        assert (await search("number 99999", deferred))[0] == tools[99_999].name
        assert tools[999].name not in await search("number 999", deferred)  # not deferred
        # +required: only tools holding the term, whatever the other words match
        got = await search("+kilo alpha bravo", deferred)
        assert got and all("kilo" in f"{t.name} {t.description}".lower() for t in tools if t.name in got)
        assert await search("+nothingholdsthis alpha", deferred) == []

    anyio.run(scenario)
    assert plugin.engine.cache.builds == {"text": 1, "bm25": 1}


def test_the_same_list_is_located_once_and_an_equal_new_list_is_recognised() -> None:
    tools = big_catalog(500)
    engine = RankingEngine(RankingConfig())
    everything = engine.cache.view(tools)
    assert everything.allowed is None  # every catalog tool is a candidate
    deferred = tools[100:]
    first = engine.cache.view(deferred)
    assert first.corpus is everything.corpus and first.allowed is not None and first.allowed.sum() == 400
    assert engine.cache.view(deferred) is first  # same object: no work per tool
    assert engine.cache.view(list(deferred)) is first  # a new list of the same tools
    assert engine.cache.view([attrs.evolve(t) for t in deferred]) is first  # equal descriptors, other objects
    assert engine.cache.view(tools) is everything
    assert engine.cache.builds == {}  # locating candidates builds nothing


def test_a_list_changed_in_place_is_not_taken_for_the_old_one() -> None:
    tools = big_catalog(300)
    engine = RankingEngine(RankingConfig())
    deferred = list(tools)
    target = tools[150]
    assert names(engine.search(SearchQuery.parse(target.name, 1), deferred)) == [target.name]
    deferred.remove(target)  # promoted: the caller's own list shrinks
    assert target.name not in names(engine.search(SearchQuery.parse(target.name, 5), deferred))
    deferred.append(target)  # and comes back at the end: same length, other tools probed
    assert names(engine.search(SearchQuery.parse(target.name, 1), deferred)) == [target.name]


def test_duplicate_names_in_the_candidates_rank_the_last_descriptor() -> None:
    engine = RankingEngine(RankingConfig())
    old = ToolDescriptor("weather_get", "Weather for a city")
    new = ToolDescriptor("weather_get", "Exchange rates between currencies")
    candidates = [old, ToolDescriptor("mail_send", "Send an email"), new]
    for _ in range(2):  # the second search finds every descriptor by identity, rebuilding nothing
        assert names(engine.search(SearchQuery.parse("currencies", 1), candidates)) == ["weather_get"]
    assert engine.cache.builds == {"text": 1, "bm25": 1}
