"""What learned priors put into the prompt prefix changes only at revisions (every
REVISE_SESSIONS sessions, or at once while nothing is learned eager): between them every
session gets the same learned-eager tools and listing; at a revision a tool learned eager
stays inside a band below its breakeven."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from greenroom import Plugin, ToolDescriptor, ToolPriors, hookimpl
from greenroom.tools import CatalogTool
from greenroom_deferred import DeferralState, DeferredConfig, DeferredToolsPlugin, PlacementSource
from greenroom_deferred.costs import cost
from greenroom_deferred.listing import SECTION_KEY
from greenroom_deferred.placement import KEEP_SHARE, REVISE_SESSIONS
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


async def test_learned_tools_change_only_at_revisions(make_runtime: Any) -> None:
    tools = [catalog_tool(f"t{i:02d}", 60) for i in range(20)]
    be = breakeven_of(tools[0])
    above, inside, below = 1.5 * be, (1 + KEEP_SHARE) / 2 * be, 0.5 * KEEP_SHARE * be
    # nothing learned: the first session revises at once, and finds nothing to start eager
    # (a store with no history); the next one, with t00 above its breakeven, places it
    seq = [{}, {"t00": above}] + [{"t00": below}] * (REVISE_SESSIONS - 1) + [{"t00": inside}, {"t00": below}]
    seen = await placements(make_runtime, tools, seq)
    assert seen[0].mode == "deferred"
    assert (seen[1].mode, seen[1].source) == ("eager", PlacementSource.PRIOR)
    # until the next revision it stays, whatever the priors say meanwhile
    held = seen[2 : REVISE_SESSIONS + 1]
    assert all(p.mode == "eager" and p.reason == seen[1].reason for p in held)
    assert seen[1].reason.startswith("prior p=") and "> breakeven" in seen[1].reason
    # the revision keeps it inside the band, the one after (REVISE_SESSIONS later) would
    # drop it; the session right after the revision holds what the revision decided
    revised = seen[REVISE_SESSIONS + 1]
    assert revised.mode == "eager" and revised.reason.endswith("(kept eager)")
    assert seen[REVISE_SESSIONS + 2].mode == "eager"


async def test_below_the_band_a_revision_defers_it_again(make_runtime: Any) -> None:
    tools = [catalog_tool(f"t{i:02d}", 60) for i in range(20)]
    be = breakeven_of(tools[0])
    seq = [{"t00": 1.5 * be}] + [{"t00": 0.5 * KEEP_SHARE * be}] * REVISE_SESSIONS
    seen = await placements(make_runtime, tools, seq)
    assert seen[0].mode == "eager"
    assert seen[-1].mode == "deferred"  # the revision: below half its breakeven
    # an agent that never had t00 eager does not start it inside the band
    (fresh,) = await placements(make_runtime, tools, [{"t00": (1 + KEEP_SHARE) / 2 * be}])
    assert fresh.mode == "deferred"


async def test_the_listing_keeps_its_priorities_between_revisions(make_runtime: Any) -> None:
    # large schemas (nothing clears its breakeven, so the view revises every session while
    # nothing is eager) would hide this; give one small tool a high prior so one is eager
    small = catalog_tool("t000", 10)
    tools = [small, *(catalog_tool(f"t{i:03d}", 3000) for i in range(1, 300))]
    learned = {"t000": 0.9}
    # revisions at sessions 0, R and 2R (R = REVISE_SESSIONS); t250 is favoured from R + 1
    seq = [learned] * (REVISE_SESSIONS + 1) + [{**learned, "t250": 0.5}] * REVISE_SESSIONS
    plugin = DeferredToolsPlugin(DeferredConfig(enabled=True, listing="names", listing_budget=300))
    rt = make_runtime(tools=tools, plugins=[SessionPriors(seq), plugin])
    listings = []
    for _ in seq:
        request = await rt.preview(rt.session())
        (section,) = [s for s in request.system if s.key == SECTION_KEY]
        listings.append(section.text)
        assert "t000" in {t.name for t in request.tools}
    # the priors favour t250 from session R + 1 on; the listing follows at the next
    # revision (2R), not before
    assert len(set(listings[: 2 * REVISE_SESSIONS])) == 1
    assert "t250" not in listings[0]
    assert "t250" in listings[2 * REVISE_SESSIONS]
