"""What learning puts into the prompt prefix (``greenroom_deferred.placing.learning``): an eager
*set* chosen by the sessions it covers; a listing that shrinks as the learned set covers
more sessions and grows back when they leave it; and a prefix that changes only when
that pays for a cache write, or at most once every REVISE_SESSIONS sessions (also with
``prior_eager = false``)."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from typing import Any

import pytest

from greenroom import Plugin, ToolDescriptor, ToolPriors, count_tokens, hookimpl
from greenroom.tools import CatalogTool
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin, PlacementSource, Rule
from greenroom_deferred.listing import SECTION_KEY
from greenroom_deferred.placing.learning import REVISE_SESSIONS

pytestmark = pytest.mark.anyio


def catalog_tool(name: str, size: int = 60, group: str | None = None) -> CatalogTool:
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": "w " * size}}}
    d = ToolDescriptor(name=name, description=f"Tool {name} does {name} things.", parameters=schema, group=group)
    return CatalogTool(d, "test")


def priors(sets: dict[frozenset[str], float], p: dict[str, float] | None = None) -> ToolPriors:
    """What a store would load: each set's share of sessions, p from them unless given."""
    if p is None:
        p = {}
        for tools, w in sets.items():
            for t in tools:
                p[t] = p.get(t, 0.0) + w / 2
    return ToolPriors(p=p, sessions=50, loaded=True, sets=dict(sets), steps=3.0)


class SessionPriors(Plugin):
    """Gives each session the next priors of a list (what a store would have loaded)."""

    name = "session-priors"
    nonblocking = True

    def __init__(self, seq: list[ToolPriors]) -> None:
        super().__init__()
        self.next: Iterator[ToolPriors] = iter(seq)

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        ctx.profile_state.set(next(self.next))


async def sessions(make_runtime: Any, tools: list[CatalogTool], seq: list[ToolPriors], **cfg: Any) -> list[Any]:
    """Per session: (eager tools sent, the listing's text, the session's placements)."""
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True, **cfg))
    rt = make_runtime(tools=tools, plugins=[SessionPriors(seq), plugin])
    out = []
    for _ in seq:
        session = rt.session()
        request = await rt.preview(session)
        (section,) = [s for s in request.system if s.key == SECTION_KEY]
        sent = {t.name for t in request.tools} - {"ToolSearch", "deferred_tool_call"}
        out.append((sent, section.text, session.state[DeferralState].modes))
    return out


def catalog(n: int = 600) -> list[CatalogTool]:
    # groups of 20: a listing of every name would pass a small budget
    return [catalog_tool(f"t{i:03d}", group=f"g{i // 20:02d}") for i in range(n)]


A = frozenset({"t001", "t002"})
B = frozenset({"t300", "t301"})


async def test_the_eager_set_is_chosen_by_the_sessions_it_covers(make_runtime: Any) -> None:
    tools = [*catalog(40), catalog_tool("ruled")]
    sets = {
        A: 0.6,  # most sessions call t001 and t002 together
        frozenset({"t010", "ruled"}): 0.3,  # these also need a tool a rule keeps deferred
        frozenset({"t020"}): 0.02,  # a set hardly any session calls
    }
    # per tool, t010 is used as much as t001: by its own use it would start eager
    p = {"t001": 0.4, "t002": 0.4, "t010": 0.4, "t020": 0.3}
    ((sent, _, modes),) = await sessions(make_runtime, tools, [priors(sets, p)], rules=(Rule("ruled", "deferred"),))
    assert sent == set(A)
    assert modes["t001"].source is PlacementSource.PRIOR
    assert modes["t001"].detail.startswith("prior: an eager set covering 60% of recent sessions")
    # a session with t010 searches for the ruled tool anyway; t020's set covers too few
    assert modes["t010"].mode == modes["t020"].mode == "deferred"


async def test_the_listing_shrinks_as_learning_grows_confident_and_grows_back(make_runtime: Any) -> None:
    tools = catalog()
    nothing = priors({})
    confident = priors({A: 0.9, frozenset(): 0.05})
    # then the sessions go elsewhere, each to tools few others use: nothing to learn
    elsewhere = priors({A: 0.03, **{frozenset({f"t{400 + i}"}): 0.04 for i in range(22)}})
    seq = [nothing, confident, confident, elsewhere, elsewhere]
    seen = await sessions(make_runtime, tools, seq, listing="names", listing_budget=1500)
    full, shrunk, held, back, _ = (count_tokens(text) for _, text, _ in seen)
    assert seen[0][0] == set() and seen[1][0] == set(A)
    # the first learned set pays at once: the listing steps down to the catalog's structure
    assert shrunk < full / 3 and held == shrunk
    assert "(20 tools)" in seen[1][1] and "more groups" in seen[1][1]
    # the sessions left the learned set: the listing grows back at once
    assert back == full and seen[3][0] == set()


async def test_without_learned_placement_the_listing_changes_once_a_window_not_every_session(
    make_runtime: Any,
) -> None:
    # the revision fault: with prior_eager = false nothing is learned eager, and the
    # listing's priorities were taken again at every session
    tools = catalog()
    seq = [priors({}, {f"t{(100 + 7 * i + j) % 600:03d}": 0.9 - 0.01 * j for j in range(12)}) for i in range(25)]
    seen = await sessions(make_runtime, tools, seq, listing="names", listing_budget=600, prior_eager=False)
    listings = [text for _, text, _ in seen]
    changes = sum(1 for a, b in itertools.pairwise(listings) if a != b)
    assert changes <= len(seq) // REVISE_SESSIONS
    assert all(sent == set() for sent, _, _ in seen)
    # the priorities do follow, a window later
    assert listings[0] != listings[-1]


async def test_the_prefix_changes_only_when_the_saving_pays_for_a_cache_write(make_runtime: Any) -> None:
    tools = catalog()
    # the priors drift a little from session to session: the learned prefix stays
    drift = [priors({A: share}) for share in (0.6, 0.62, 0.59, 0.61)]
    # a new habit: worth a cache write at once, not a window later
    habit = priors({frozenset({"t100", "t101"}): 0.9})
    seen = await sessions(make_runtime, tools, [*drift, habit], listing="names", listing_budget=1500)
    assert [sent for sent, _, _ in seen] == [set(A)] * len(drift) + [{"t100", "t101"}]
    assert len({text for _, text, _ in seen[: len(drift)]}) == 1  # the same listing too: one prefix
    assert seen[-1][1] != seen[0][1]
