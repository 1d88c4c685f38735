"""What learned priors put into the prompt prefix holds steady from session to session:
a learned-eager tool stays eager inside a band below its breakeven, and the listing's
priorities change only when the learned-eager set does (or every REFRESH_SESSIONS)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from greenroom import Plugin, ToolDescriptor, ToolPriors, hookimpl
from greenroom.tools import CatalogTool
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin, PlacementSource
from greenroom_deferred.costs import cost
from greenroom_deferred.listing import SECTION_KEY
from greenroom_deferred.placement import KEEP_SHARE, REFRESH_SESSIONS
from greenroom_deferred.retention import breakeven

pytestmark = pytest.mark.anyio


def catalog_tool(name: str, size: int) -> CatalogTool:
    schema = {"type": "object", "properties": {"x": {"type": "string", "description": "w " * size}}}
    return CatalogTool(ToolDescriptor(name=name, description=f"Tool {name}.", parameters=schema), "test")


class SessionPriors(Plugin):
    """Gives each session the next priors of a list (what a store would have loaded)."""

    name = "session-priors"
    nonblocking = True

    def __init__(self, priors: list[dict[str, float]]) -> None:
        super().__init__()
        self.next: Iterator[dict[str, float]] = iter(priors)

    @hookimpl(tryfirst=True)
    def greenroom_run_start(self, ctx: Any) -> None:
        ctx.profile_state.set(ToolPriors(p=next(self.next), sessions=20, loaded=True))


def breakeven_of(tool: CatalogTool) -> float:
    c = cost(tool.descriptor, "tokens")
    return breakeven(c.c, c.c_bar, DeferredConfig().retention.gamma)


async def placements(make_runtime: Any, tools: list[CatalogTool], priors: list[dict[str, float]]) -> list[Any]:
    rt = make_runtime(tools=tools, plugins=[SessionPriors(priors), DeferredToolsPlugin(DeferredConfig(enabled=True))])
    out = []
    for _ in priors:
        session = rt.session()
        await rt.preview(session)
        out.append(session.state[DeferralState].modes["t00"])
    return out


async def test_a_learned_tool_stays_eager_inside_the_band(make_runtime: Any) -> None:
    tools = [catalog_tool(f"t{i:02d}", 60) for i in range(20)]
    be = breakeven_of(tools[0])
    above, inside, below = 1.5 * be, (1 + KEEP_SHARE) / 2 * be, 0.5 * KEEP_SHARE * be
    joined, kept, left = await placements(make_runtime, tools, [{"t00": above}, {"t00": inside}, {"t00": below}])
    assert (joined.mode, joined.source) == ("eager", PlacementSource.PRIOR)
    assert kept.mode == "eager" and kept.reason.endswith("(kept eager)")
    assert left.mode == "deferred"
    # the same prior inside the band, for an agent that had not learned the tool eager
    (fresh,) = await placements(make_runtime, tools, [{"t00": inside}])
    assert fresh.mode == "deferred"


async def test_the_listing_keeps_its_priorities_while_the_learned_set_holds(make_runtime: Any) -> None:
    # large schemas (nothing clears its breakeven) and a listing that names only some tools
    tools = [catalog_tool(f"t{i:03d}", 3000) for i in range(300)]
    favoured = [{"t250": 0.5}] * REFRESH_SESSIONS + [{"t250": 0.5, "t260": 0.5}]
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True, listing="names", listing_budget=300))
    rt = make_runtime(tools=tools, plugins=[SessionPriors([{}, *favoured]), plugin])
    listings = []
    for _ in range(REFRESH_SESSIONS + 2):
        request = await rt.preview(rt.session())
        (section,) = [s for s in request.system if s.key == SECTION_KEY]
        listings.append(section.text)
    # sessions 1 .. REFRESH_SESSIONS: one listing, although the priors changed after the first
    assert len(set(listings[:REFRESH_SESSIONS])) == 1
    assert "t250" not in listings[0]
    # then the view is taken from the priors again: the favoured name is listed
    assert "t250" in listings[REFRESH_SESSIONS]
    assert listings[REFRESH_SESSIONS + 1] == listings[REFRESH_SESSIONS]  # t260 waits for the next refresh
