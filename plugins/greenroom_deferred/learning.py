"""What learning puts into the prompt prefix, per agent: one budget for the learned eager
tools and the listing, and when it may change.

**The eager set.** A session saves its search step only when *every* tool it calls is
visible without a search, so tools are chosen as sets, by the sessions they cover, not
one by one by their own use. The priors say which tools recent sessions called together
(``ToolPriors.sets``: each set with its share of sessions); a set counts as covered by
an eager set that holds all of its tools (tools that are eager anyway, by the config or
as the plugin's own, are free). Per session, in tokens, an eager set ``S`` covering a
share ``cov`` of sessions is worth

    gain(S) = cov * search + steps * (listing - room(cov)) - steps * tokens(S)

``search``: what a search step costs (``retention.gamma`` plus the listing it re-sends);
``steps``: model calls per session (learned, ``ToolPriors.steps``); ``listing``: the
listing's tokens when nothing is learned; ``room(cov)``: what is left of it (below);
``tokens(S)``: what the set's schemas add to every step. Sets are added greedily while
the gain grows, within ``EAGER_SHARE`` of the budget, and only sets that at least
``MIN_SET_SHARE`` of sessions called: a set few sessions use is not sent.

**The listing.** What the listing is for is the sessions the eager set does not cover:
its room is its size with nothing learned times the share of sessions left uncovered,
and at least ``LISTING_FLOOR`` of the budget (a listing smaller than that stays whole).
As coverage grows the listing steps down to every group with its count and the learned
names; when sessions leave the learned set, coverage falls and the listing grows back.

**Revisions.** Each change of the prefix is one cache write of it (a provider bills it
at about 1.25x the input price, and reads it at 0.1x), so the learned prefix changes only

- at an agent's first session in this process;
- when the expected saving of the new choice over the held one, over the next
  ``REVISE_SESSIONS`` sessions, exceeds ``CACHE_WRITE`` times the prefix's tokens;
- when coverage of the held set fell below half of what it was when chosen and the listing
  had shrunk for it (the listing grows back);
- at most once every ``REVISE_SESSIONS`` sessions otherwise, when the learned names or
  the eager set would change and the change costs nothing (the listing's priorities follow
  usage, also with ``prior_eager = false``).

The view lives in the runtime's profile state: one long-lived process (``greenroom
serve``, ``greenroom eval``, an application) keeps it; separate ``greenroom run``
processes each choose from the stored priors.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from collections.abc import Set as AbstractSet

import attrs

from greenroom import ToolPriors
from greenroom_deferred.descriptors import OWN_TOOLS
from greenroom_deferred.state import Placement

REVISE_SESSIONS = 10
"""The revision window: sessions over which a change of the prefix is expected to pay."""
CACHE_WRITE = 1.25
"""What writing the prefix into a provider's prompt cache costs, in input tokens per token."""
EAGER_SHARE = 0.5
"""At most this share of the budget goes to learned eager schemas."""
LISTING_FLOOR = 0.125
"""The listing keeps at least this share of its budget (all of itself when smaller),
however confident learning is."""
MIN_SET_SHARE = 0.05
"""A set of tools fewer sessions than this called is never chosen for itself."""
DEFAULT_STEPS = 2.0
"""Model calls per session assumed when the priors do not say (an older document)."""
PRIORITY_NAMES = 128
"""The learned names the listing favours, at most (the likeliest used deferred tools)."""


@attrs.frozen
class Choice:
    """A learned eager set, the share of sessions it covers, its schema tokens, and what
    it is worth per session (``gain``, tokens)."""

    names: frozenset[str] = frozenset()
    coverage: float = 0.0
    tokens: float = 0.0
    gain: float = 0.0


@attrs.frozen
class Economy:
    """What a session's tokens are made of, for ``gain``: model calls per session, the
    cost of a search step, the listing's tokens with nothing learned, the budget."""

    steps: float
    search: float
    listing: float
    budget: float

    def gain(self, coverage: float, tokens: float) -> float:
        return coverage * self.search + self.steps * (self.listing - self.room(coverage)) - self.steps * tokens

    def room(self, coverage: float) -> int:
        """The listing's room, in tokens, when ``coverage`` of sessions need none of it:
        never below ``LISTING_FLOOR`` of the budget (a listing smaller than that stays whole)."""
        floor = min(self.listing, self.budget * LISTING_FLOOR) if self.budget else self.listing * LISTING_FLOOR
        return int(max(self.listing * (1.0 - coverage), floor))


def coverage(names: AbstractSet[str], sets: Mapping[frozenset[str], float]) -> float:
    """The share of sessions whose every tool is in ``names`` (sets already stripped of
    what is visible anyway)."""
    return min(1.0, sum(w for tools, w in sets.items() if tools <= names))


def strip(
    sets: Mapping[frozenset[str], float], free: Collection[str], eligible: Collection[str]
) -> dict[frozenset[str], float]:
    """The sets without the tools that are visible anyway (``free``: the plugin's own,
    and tools eager by the config), leaving out those that hold a tool no learned set may
    make eager (deferred by a rule, gone), and those of sessions that searched and then
    called no deferred tool (nothing eager would have spared them the search)."""
    out: dict[frozenset[str], float] = {}
    for tools, w in sets.items():
        rest = frozenset(t for t in tools if t not in free)
        if not rest and not tools.isdisjoint(OWN_TOOLS):
            continue
        if all(t in eligible for t in rest):
            out[rest] = out.get(rest, 0.0) + w
    return out


def choose(costs: Mapping[str, float], sets: Mapping[frozenset[str], float], economy: Economy) -> Choice:
    """The eager set worth most per session (greedy over the sets sessions called).
    ``costs``: what each tool that may be learned eager adds to every step; ``sets``:
    stripped (``strip``)."""
    cap = economy.budget * EAGER_SHARE if economy.budget else float("inf")
    chosen: frozenset[str] = frozenset()
    spent = 0.0
    best = Choice(chosen, coverage(chosen, sets), 0.0, economy.gain(coverage(chosen, sets), 0.0))
    candidates = sorted((t for t, w in sets.items() if t and w >= MIN_SET_SHARE), key=lambda t: (-sets[t], sorted(t)))
    while True:
        step: Choice | None = None
        for tools in candidates:
            if tools <= chosen:
                continue
            names = chosen | tools
            tokens = spent + sum(costs[t] for t in tools - chosen)
            if tokens > cap:
                continue
            cov = coverage(names, sets)
            if economy.room(cov) + tokens > economy.budget > 0:
                continue
            gain = economy.gain(cov, tokens)
            if gain > (step.gain if step is not None else best.gain):
                step = Choice(names, cov, tokens, gain)
        if step is None:
            return best
        best, chosen, spent = step, step.names, step.tokens


@attrs.frozen
class Learned:
    """What learning puts into the prefix: the eager tools (each with its reason), the
    share of sessions they covered when chosen, their schema tokens, the listing's room
    (None: its whole budget) and the names it favours (likeliest used first)."""

    eager: Mapping[str, str] = attrs.field(factory=dict)
    coverage: float = 0.0
    tokens: float = 0.0
    room: int | None = None
    priority: Mapping[str, float] = attrs.field(factory=dict)

    def same_prefix(self, other: Learned) -> bool:
        return (set(self.eager), self.room, set(self.priority)) == (set(other.eager), other.room, set(other.priority))


@attrs.frozen
class Outlook:
    """A candidate against what is held, by today's priors: what each is worth per
    session (tokens), the share of sessions the held set covers now, and the candidate
    prefix's tokens (what a cache write of it costs)."""

    gain: float
    held_gain: float
    held_coverage: float
    prefix: float


@attrs.define(eq=False)
class LearnedView:
    """Profile scope: what learning puts into the prefix for the agent now (None before
    its first session in this process), the sessions since it last changed, and the
    tokens of the listing with nothing learned, as last rendered (None: not yet)."""

    held: Learned | None = None
    sessions: int = 0
    listing_tokens: int | None = None

    @property
    def eager(self) -> Mapping[str, str]:
        return self.held.eager if self.held is not None else {}

    @property
    def priority(self) -> Mapping[str, float]:
        return self.held.priority if self.held is not None else {}

    @property
    def room(self) -> int | None:
        return self.held.room if self.held is not None else None

    def revise(self, candidate: Learned, outlook: Outlook) -> bool:
        """Take ``candidate`` or keep what is held (the rules in the module's docstring);
        whether the prefix changed."""
        held = self.held
        self.sessions += 1
        if held is not None and candidate.same_prefix(held):
            return False
        pays = (outlook.gain - outlook.held_gain) * REVISE_SESSIONS > CACHE_WRITE * outlook.prefix
        # the listing shrank for sessions the held set covered; they left it: grow it back
        lost = held is not None and held.room is not None and outlook.held_coverage < held.coverage / 2
        window = self.sessions > REVISE_SESSIONS and outlook.gain >= outlook.held_gain
        if held is None or pays or lost or window:
            self.held, self.sessions = candidate, 1
            return True
        return False


def consider(
    view: LearnedView,
    *,
    priors: ToolPriors,
    modes: Mapping[str, Placement],
    costs: Callable[[str], float | None],
    budget: int,
    gamma: float,
    learn_eager: bool,
) -> Learned:
    """Revise ``view`` for a session placed as ``modes`` (before learning) and return
    what it holds. ``costs(name)``: what the tool's schema adds to a step (None: not
    known); ``budget``: the listing budget (0: no limit); ``learn_eager``: whether
    learning may place tools eager (``prior_eager``)."""
    free = set(OWN_TOOLS)
    eligible: dict[str, float] = {}
    for name in {t for tools in priors.sets for t in tools} if learn_eager else ():
        placement = modes.get(name)
        if placement is None:
            continue
        if placement.mode == "eager":
            free.add(name)
        elif placement.source.yields_to_priors:
            c = costs(name)
            if c is not None:
                eligible[name] = c
    sets = strip(priors.sets, free, eligible)
    listing = float(view.listing_tokens if view.listing_tokens is not None else budget or FALLBACK_LISTING)
    steps = priors.steps or DEFAULT_STEPS
    economy = Economy(steps=steps, search=gamma + listing, listing=listing, budget=float(budget or 0))
    pick = choose(eligible, sets, economy) if learn_eager and sets else Choice()
    why = f"prior: an eager set covering {pick.coverage:.0%} of recent sessions"
    room = economy.room(pick.coverage)
    shrinks = (bool(pick.names) or (learn_eager and pick.coverage > 0)) and room < listing
    top = sorted(
        ((n, p) for n, p in priors.p.items() if n not in pick.names and (m := modes.get(n)) and m.mode == "deferred"),
        key=lambda item: (-item[1], item[0]),
    )[:PRIORITY_NAMES]
    candidate = Learned(
        eager={n: f"{why} (p={priors.get(n):.3f})" for n in sorted(pick.names)},
        coverage=pick.coverage,
        tokens=pick.tokens,
        room=room if shrinks else None,
        priority=dict(top),
    )
    held = view.held or Learned()
    held_cov = coverage(set(held.eager), sets)
    # a shrink of the listing is worth what it was chosen for only while the sessions it
    # was shrunk for are still covered
    kept = min(1.0, held_cov / held.coverage) if held.coverage else 0.0
    held_gain = worth(economy, held_cov, held.tokens, held.room, kept)
    gain = worth(economy, pick.coverage, pick.tokens, candidate.room)
    prefix = pick.tokens + (candidate.room if candidate.room is not None else listing)
    view.revise(candidate, Outlook(gain, held_gain, held_cov, prefix))
    assert view.held is not None
    return view.held


def worth(economy: Economy, cov: float, tokens: float, room: int | None, kept: float = 1.0) -> float:
    """``Economy.gain`` of a prefix whose listing has ``room`` (None: all of it), its
    shrink counted for ``kept`` of what it saves."""
    shrink = 0.0 if room is None else economy.steps * (economy.listing - room) * kept
    return cov * economy.search + shrink - economy.steps * tokens


FALLBACK_LISTING = 8000
"""The listing's tokens assumed with no listing budget, before one was rendered."""


__all__ = [
    "CACHE_WRITE",
    "REVISE_SESSIONS",
    "Choice",
    "Economy",
    "Learned",
    "LearnedView",
    "Outlook",
    "choose",
    "consider",
    "coverage",
]
