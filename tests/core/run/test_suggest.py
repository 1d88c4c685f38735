"""Did you mean: the obvious mistakes in a tool name are found among 100,000 names, with a
bounded number of names scored, whatever is typed or in the pool."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.gr_testutil import DATASETS

from greenroom.run import suggest
from greenroom.run.suggest import MAX_SCORED, NameIndex, close_names

GITHUB = [
    "search_issues", "search_code", "search_orgs", "search_pull_requests", "search_repositories",
    "search_users", "get_issue", "list_issues", "create_issue", "update_issue", "add_issue_comment",
    "get_file_contents", "create_or_update_file", "list_commits", "get_me", "fork_repository",
]  # fmt: skip
DOMAINS = ["Finance", "Weather", "Travel", "Health", "Energy", "Sports", "Retail", "Legal"]
VERBS = ["get", "list", "create", "update", "delete", "search", "analyze", "calculate", "book", "track"]
NOUNS = ["Forecast", "Account", "Flight", "Patient", "Invoice", "Order", "Route", "Report", "Score", "Price"]


def big_pool(size: int) -> list[str]:
    """A catalog like a large merged one: many servers, many with the same tools, names in
    snake_case, camelCase and kebab-case."""
    names: list[str] = []
    server = 0
    while len(names) < size:
        names += [f"github{server or ''}__{t}" for t in GITHUB]
        domain = DOMAINS[server % len(DOMAINS)]
        names += [f"{domain}_{server}__{v}{n}" for v in VERBS for n in NOUNS]
        names += [f"files-{server}__{v}-{n.lower()}-v2" for v in VERBS[:3] for n in NOUNS[:3]]
        server += 1
    return names[:size]


POOL = big_pool(100_000)

# what was typed, and the name meant (the unprefixed ones may be meant in any server)
TYPOS = {
    "wrong case": ("GitHub__Search_Issues", "github__search_issues"),
    "one edit": ("github__serch_issues", "github__search_issues"),
    "one letter more": ("github__search_issuess", "github__search_issues"),
    "two edits": ("github__serch_isues", "github__search_issues"),
    "swapped letters": ("github__saerch_issues", "github__search_issues"),
    "edit at the start": ("github__earch_issues", "github__search_issues"),
    "two edits in camelCase": ("Weather_1__getForcast", "Weather_1__getForecast"),
    "prefix misspelt": ("githib__create_issue", "github__create_issue"),
    "words swapped": ("github__issue_create", "github__create_issue"),
    "words swapped in camelCase": ("Energy_4__ForecastGet", "Energy_4__getForecast"),
    "snake for camel": ("Weather_1__get_forecast", "Weather_1__getForecast"),
    "kebab words swapped": ("files-3__flight-get-v2", "files-3__get-flight-v2"),
}
UNPREFIXED = {
    "prefix dropped": ("search_issues", "__search_issues"),
    "prefix dropped and one edit": ("serch_issues", "__search_issues"),
    "prefix dropped, words swapped": ("issues_search", "__search_issues"),
    "prefix dropped, camelCase": ("bookFlight", "__bookFlight"),
}


@pytest.mark.parametrize("kind", list(TYPOS))
def test_an_obvious_typo_is_the_first_suggestion(kind: str) -> None:
    typed, meant = TYPOS[kind]
    assert meant in POOL
    assert close_names(typed, POOL)[0] == meant


@pytest.mark.parametrize("kind", list(UNPREFIXED))
def test_a_name_without_its_server_prefix_is_found_in_some_server(kind: str) -> None:
    typed, ending = UNPREFIXED[kind]
    found = close_names(typed, POOL)
    assert found and all(name.endswith(ending) for name in found)


def test_a_small_pool_is_scored_whole_as_before() -> None:
    assert close_names("ad", ["add", "sub", "mul"]) == ["add"]
    assert close_names("search", ["alpha", "beta"]) == []
    assert close_names("GET_ME", ["github__get_me", "list"], n=1) == ["github__get_me"]


def test_nothing_alike_suggests_nothing() -> None:
    assert close_names("zzzzqqqq", POOL) == []
    assert close_names("", POOL) == []
    assert close_names("anything", []) == []
    assert close_names("search_issues", POOL, n=0) == []


class Counted:
    """Calls of a function of ``suggest``: the work a lookup does, not its time."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, name: str) -> None:
        self.calls = 0
        original: Callable[..., object] = getattr(suggest, name)

        def counted(*args: object) -> object:
            self.calls += 1
            return original(*args)

        monkeypatch.setattr(suggest, name, counted)


def misses() -> Iterator[str]:
    yield from (typed for typed, _ in TYPOS.values())
    yield from (typed for typed, _ in UNPREFIXED.values())
    yield from ["zzzz", "x", "get", "a_b_c_d_e_f_g", "Search" * 20, "é" * 64, "github__" * 16]


def test_at_100000_names_a_lookup_scores_a_bounded_number_of_names(monkeypatch: pytest.MonkeyPatch) -> None:
    index = NameIndex(POOL)
    scored = Counted(monkeypatch, "_score")
    compared = Counted(monkeypatch, "_common_start")
    for typed in misses():
        scored.calls = compared.calls = 0
        index.close(typed)
        assert scored.calls <= MAX_SCORED
        # two comparisons for each name read next to a probe
        assert compared.calls <= 2 * (2 * suggest.NEIGHBOURS) * suggest.MAX_PROBES


def test_the_same_bound_holds_at_1000_and_100000_names(monkeypatch: pytest.MonkeyPatch) -> None:
    small, large = NameIndex(big_pool(1_000)), NameIndex(POOL)
    compared = Counted(monkeypatch, "_common_start")
    work = []
    for index in (small, large):
        compared.calls = 0
        for typed in misses():
            index.close(typed)
        work.append(compared.calls)
    assert work[1] <= work[0] * 1.2


def test_a_pool_equal_to_the_last_reuses_its_index(monkeypatch: pytest.MonkeyPatch) -> None:
    built = Counted(monkeypatch, "NameIndex")
    pool = big_pool(5_000)
    close_names("serch_issues", pool)
    close_names("get_mee", list(pool))  # a new list of the same names, as calls.py makes
    assert built.calls <= 1
    changed = [*pool, "github__search_issues_v2"]
    assert close_names("github__search_issues_v", changed)[0] == "github__search_issues_v2"
    assert built.calls <= 2


def test_a_megabyte_name_is_cut_and_answered() -> None:
    huge = "github__search_issues" + "x" * 1_000_000
    assert all(name in POOL for name in close_names(huge, POOL))
    assert close_names("y" * 1_000_000, POOL) == []
    pool = ["a" * 1_000_000, "b" * 1_000_000, *big_pool(200)]
    assert close_names("a" * 1_000_001, pool)[0] == "a" * 1_000_000


NAMES = st.text(min_size=0, max_size=40) | st.sampled_from(POOL[:500])


@settings(max_examples=300, deadline=None)
@given(typed=NAMES, pool=st.lists(NAMES, max_size=80), n=st.integers(-1, 5))
def test_never_raises_and_answers_only_names_of_the_pool(typed: str, pool: list[str], n: int) -> None:
    found = close_names(typed, pool, n)
    assert len(found) <= max(n, 0)
    assert len(set(found)) == len(found)
    assert all(name in pool for name in found)


@pytest.mark.skipif(not (DATASETS / "seal_tools").exists(), reason="../shared/datasets not present")
def test_every_real_tool_name_with_one_letter_dropped_is_found() -> None:
    names = [json.loads(line)["name"] for line in (DATASETS / "seal_tools" / "tools.jsonl").read_text().splitlines()]
    index = NameIndex(names)
    missed = [n for n in names[::20] if len(n) > 6 and n not in index.close(n[:3] + n[4:])]
    assert len(missed) <= len(names[::20]) // 50  # other names as close may come first


QUALIFIERS = ["", "s", "List", "Details"]


def copied_pool(tools: int, copies: int) -> list[str]:
    """Tools each repeated under renamed copies (``name__r1`` ... ``name__rN``), as the scale
    benchmark's catalogs are and as one tool is under many servers: the copies of a name sort
    together and share all but the end, so they crowd the names read near a probe."""
    bases = [f"{v}{d}{n}{q}" for q in QUALIFIERS for d in DOMAINS for v in VERBS for n in NOUNS][:tools]
    return [f"{base}__r{copy}" if copy else base for base in bases for copy in range(copies + 1)]


COPIED = copied_pool(2_000, 20)
COPIED_INDEX = NameIndex(COPIED)
COPIED_SET = frozenset(COPIED)


def benchmark_typo(name: str, at: int, swap: bool) -> str:
    """Two neighbouring letters swapped or one dropped, as ``benchmarks/scale_catalog.py``'s
    ``misspell`` makes them: not the first letter nor the last two."""
    at = 1 + at % (len(name) - 3)
    return name[:at] + name[at + 1] + name[at] + name[at + 2 :] if swap else name[:at] + name[at + 1 :]


@settings(max_examples=400, deadline=None)
@given(meant=st.sampled_from(COPIED), at=st.integers(0, 200), swap=st.booleans())
def test_a_typo_in_a_name_with_many_copies_finds_the_name_meant(meant: str, at: int, swap: bool) -> None:
    typed = benchmark_typo(meant, at, swap)
    if typed in COPIED_SET:
        return  # swapped equal letters, or another real name
    with pytest.MonkeyPatch.context() as patch:
        scored = Counted(patch, "_score")
        looked_up = CountedMethod(patch, suggest._Sorted, "find")
        found = COPIED_INDEX.close(typed)
    assert meant in found
    assert scored.calls <= MAX_SCORED
    assert looked_up.calls <= suggest.MAX_REPAIRS


def test_a_typo_with_one_tool_under_many_servers_finds_the_typed_servers_tool() -> None:
    # 6,250 servers with the same tools: the neighbours of a typo are other servers' copies
    assert close_names("github7__craete_issue", POOL)[0] == "github7__create_issue"
    assert close_names("github7__create_isue", POOL)[0] == "github7__create_issue"
    assert close_names("Retail_118__aclculateFlight", POOL)[0] == "Retail_118__calculateFlight"
    assert close_names("getWeatherForcast__r13", COPIED)[0] == "getWeatherForecast__r13"


class CountedMethod:
    """Calls of a method of a class of ``suggest``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, owner: type, name: str) -> None:
        self.calls = 0
        original: Callable[..., object] = getattr(owner, name)

        def counted(*args: object, **kwargs: object) -> object:
            self.calls += 1
            return original(*args, **kwargs)

        monkeypatch.setattr(owner, name, counted)
