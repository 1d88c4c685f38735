"""What learning puts into the prompt prefix, per agent: one budget for the learned eager
tools and the listing, and when it may change.

**The eager set.** A session saves its search step only when *every* tool it calls is
visible without a search, so tools are chosen as sets, by the sessions they cover, not
one by one by their own use. The priors say which tools recent sessions called together
(``ToolPriors.sets``: each set with its share of sessions); a set counts as covered by an
eager set that holds all of its tools (tools that are eager anyway, by the config, an
eager hint or as the plugin's own, are free: never chosen, never counted against the
budget, and never demoted, for learning only adds to what is eager). A share is taken
at the low end of what the sessions seen support (``ERRORS`` standard errors below it,
over at most ``EFFECTIVE_SESSIONS``): a set one session of many called is not taken for
a habit, while an agent's only session is.

Per session, in input-token prices (a prefix token is read from the provider's cache at
``CACHE_READ``; what a search step adds is written at about the full price), an eager set
``S`` covering a share ``cov`` of sessions is worth

    gain(S) = cov * search + CACHE_READ * steps * (listing - room(cov) - tokens(S))

``search``: what a search step costs (the schemas it returns, ``results`` of them of the
size the learnable tools have, written to the cache; and re-reading the listing);
``steps``: model calls per session (``ToolPriors.steps``); ``listing``: the listing's
tokens with nothing learned; ``room(cov)``: what is left of it (below); ``tokens(S)``:
what the set's schemas add to every step. Sets are added greedily
while the gain grows, within ``EAGER_SHARE`` of the budget and only sets whose share is at
least ``MIN_SET_SHARE``: a set few sessions use is not sent.

**The listing.** What the listing is for is the sessions the eager set does not cover:
its room is its size with nothing learned times the share of sessions left uncovered,
and at least ``LISTING_FLOOR`` of the budget (a listing smaller than that stays whole).
As coverage grows the listing steps down to every group with its count and the learned
names; when sessions leave the learned set, coverage falls and the listing grows back.

**Revisions.** Each change of the prefix is a cache write of it (``CACHE_WRITE`` times the
input price, where a read costs ``CACHE_READ``), so the learned prefix changes only

- at an agent's first session in this process;
- when the expected saving of the new choice over the held one, over the next
  ``REVISE_SESSIONS`` sessions, exceeds that write;
- when the sessions left the held set (its coverage, as observed, fell below a third of
  what it was when chosen) and what would be learned now leaves the listing at least
  twice as large as the held one (the listing grows back);
- to follow usage in the names the listing favours, at most once every
  ``REVISE_SESSIONS`` sessions (also with ``prior_eager = false``; the eager set and the
  listing's room stay as they were).

The view lives in the runtime's profile state: one long-lived process (``greenroom
serve``, ``greenroom eval``, an application) keeps it; separate ``greenroom run``
processes each choose from the stored priors.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from collections.abc import Set as AbstractSet

import attrs

from greenroom import ToolPriors
from greenroom_deferred.descriptors import OWN_TOOLS
from greenroom_deferred.state import Placement

REVISE_SESSIONS = 10
"""The revision window: sessions over which a change of the prefix is expected to pay."""
CACHE_WRITE = 1.25
"""What writing a token into a provider's prompt cache costs, in input-token prices."""
CACHE_READ = 0.1
"""What reading a cached token costs, in input-token prices."""
EAGER_SHARE = 0.5
"""At most this share of the budget goes to learned eager schemas."""
LISTING_FLOOR = 0.125
"""The listing keeps at least this share of its budget (all of itself when smaller),
however confident learning is."""
LEFT = 3
"""Sessions left a learned set when its coverage fell below 1/LEFT of what it was."""
MIN_SET_SHARE = 0.05
"""A set of tools fewer sessions than this called is never chosen for itself."""
EFFECTIVE_SESSIONS = 19
"""How many sessions the priors' shares rest on at most (an EWMA whose newest session
weighs 0.1 remembers about (2 - 0.1) / 0.1 of them)."""
ERRORS = 0.75
"""How many standard errors below its observed value a share is taken (0.5, 0.75 and 1
were measured with ``benchmarks/eval_priors.py``: 1 saved a quarter fewer searches, 0.5
changed the prefix half as often again on metatool; docs/priors.md)."""
DEFAULT_STEPS = 2.0
"""Model calls per session assumed when the priors do not say (an older document)."""
PRIORITY_NAMES = 128
"""The learned names the listing favours, at most (the likeliest used deferred tools)."""
FALLBACK_LISTING = 8000
"""The listing's tokens assumed with no listing budget, before one was rendered."""


@attrs.frozen
class Choice:
    """A learned eager set, the share of sessions it covers, its schema tokens, and what
    it is worth per session (``gain``)."""

    names: frozenset[str] = frozenset()
    coverage: float = 0.0
    tokens: float = 0.0
    gain: float = 0.0


@attrs.frozen
class Economy:
    """What a session costs, for ``gain``: model calls per session, the cost of a search
    step, the listing's tokens with nothing learned, the budget (0: none)."""

    steps: float
    search: float
    listing: float
    budget: float

    def gain(self, coverage: float, tokens: float, room: float | None = None, kept: float = 1.0) -> float:
        """What an eager set of ``tokens`` covering ``coverage`` is worth per session, its
        listing shrunk to ``room`` (default: ``room(coverage)``) and that shrink counted
        for ``kept`` of what it saves."""
        left = self.room(coverage) if room is None else room
        return coverage * self.search + CACHE_READ * self.steps * ((self.listing - left) * kept - tokens)

    def room(self, coverage: float) -> int:
        """The listing's room, in tokens, when ``coverage`` of sessions need none of it:
        never below ``LISTING_FLOOR`` of the budget (a listing smaller than that stays whole)."""
        floor = min(self.listing, self.budget * LISTING_FLOOR) if self.budget else self.listing * LISTING_FLOOR
        return int(max(self.listing * (1.0 - coverage), floor))


def coverage(names: AbstractSet[str], sets: Mapping[frozenset[str], float]) -> float:
    """The share of sessions whose every tool is in ``names`` (sets already stripped of
    what is visible anyway)."""
    return min(1.0, sum(w for tools, w in sets.items() if tools <= names))


def assured(share: float, sessions: int) -> float:
    """A share of sessions taken at the low end of what ``sessions`` support: ``ERRORS``
    standard errors below it (an agent's only session, or a set every session had, stays
    whole)."""
    n = max(1, min(sessions, EFFECTIVE_SESSIONS))
    return max(0.0, share - ERRORS * math.sqrt(share * (1.0 - share) / n))


def strip(
    sets: Mapping[frozenset[str], float], free: Collection[str], eligible: Collection[str], sessions: int | None
) -> dict[frozenset[str], float]:
    """The sets without the tools that are visible anyway (``free``: the plugin's own,
    and tools eager by the config or a hint), each share ``assured`` over ``sessions``
    (None: as observed); leaving out the sets that hold a tool no learned set may make
    eager (deferred by a rule, gone), and those of sessions that searched and then called
    no deferred tool (nothing eager would have spared them the search)."""
    out: dict[frozenset[str], float] = {}
    for tools, w in sets.items():
        rest = frozenset(t for t in tools if t not in free)
        if not rest and not tools.isdisjoint(OWN_TOOLS):
            continue
        if all(t in eligible for t in rest):
            out[rest] = out.get(rest, 0.0) + (w if sessions is None else assured(w, sessions))
    return out


def choose(costs: Mapping[str, float], sets: Mapping[frozenset[str], float], economy: Economy) -> Choice:
    """The eager set worth most per session (greedy over the sets sessions called).
    ``costs``: what each tool that may be learned eager adds to every step; ``sets``:
    stripped (``strip``)."""
    cap = economy.budget * EAGER_SHARE if economy.budget else math.inf
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
            if economy.budget and economy.room(cov) + tokens > economy.budget:
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
    share of sessions they covered when chosen (as observed), their schema tokens, the listing's room
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
    session, the share of sessions the held set covers now (as observed), and the
    candidate prefix's tokens (what a cache write of it costs)."""

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
        """Take ``candidate`` (or only its listing's names) or keep what is held (the
        rules in the module's docstring); whether the prefix changed."""
        held = self.held
        self.sessions += 1
        if held is not None and candidate.same_prefix(held):
            return False
        pays = (outlook.gain - outlook.held_gain) * REVISE_SESSIONS > (CACHE_WRITE - CACHE_READ) * outlook.prefix
        # the listing shrank for sessions the held set covered; they left it, and nothing
        # learned stands for them: grow the listing back
        grows = held is not None and held.room is not None and (candidate.room or math.inf) > 2 * held.room
        lost = grows and held is not None and outlook.held_coverage < held.coverage / LEFT
        if held is None or pays or lost:
            self.held, self.sessions = candidate, 1
            return True
        refreshed = attrs.evolve(held, priority=candidate.priority)
        if self.sessions > REVISE_SESSIONS and not refreshed.same_prefix(held):
            self.held, self.sessions = refreshed, 1
            return True
        return False


def consider(
    view: LearnedView,
    *,
    priors: ToolPriors,
    modes: Mapping[str, Placement],
    costs: Callable[[str], tuple[float, float] | None],
    budget: int,
    results: int,
    learn_eager: bool,
) -> Learned:
    """Revise ``view`` for a session placed as ``modes`` (before learning) and return
    what it holds. ``costs(name)``: what the tool's schema adds to a step when eager, and
    its whole definition as a search returns it (None: not known); ``budget``: the listing
    budget (0: no limit); ``results``: how many schemas a search returns; ``learn_eager``:
    whether learning may place tools eager (``prior_eager``)."""
    free = set(OWN_TOOLS)
    eligible: dict[str, float] = {}
    sizes: list[float] = []
    for name in {t for tools in priors.sets for t in tools} if learn_eager else ():
        placement = modes.get(name)
        if placement is None:
            continue
        if placement.mode == "eager":
            free.add(name)
        elif placement.source.yields_to_priors:
            c = costs(name)
            if c is not None:
                eligible[name] = c[0]
                sizes.append(c[1])
    sets = strip(priors.sets, free, eligible, priors.sessions) if learn_eager else {}
    listing = float(view.listing_tokens if view.listing_tokens is not None else budget or FALLBACK_LISTING)
    steps = priors.steps or DEFAULT_STEPS
    # a search step writes what it found into the cache and re-reads the listing
    found = results * (sum(sizes) / len(sizes) if sizes else 0.0)
    search = CACHE_WRITE * found + CACHE_READ * listing
    economy = Economy(steps=steps, search=search, listing=listing, budget=float(budget))
    pick = choose(eligible, sets, economy) if sets else Choice()
    room = economy.room(pick.coverage)
    shrinks = (bool(pick.names) or pick.coverage > 0) and room < listing
    observed = strip(priors.sets, free, eligible, None)
    seen = coverage(pick.names, observed)
    why = f"prior: an eager set covering {seen:.0%} of recent sessions"
    top = sorted(
        ((n, p) for n, p in priors.p.items() if n not in pick.names and (m := modes.get(n)) and m.mode == "deferred"),
        key=lambda item: (-item[1], item[0]),
    )[:PRIORITY_NAMES]
    candidate = Learned(
        eager={n: f"{why} (p={priors.get(n):.3f})" for n in sorted(pick.names)},
        coverage=seen,
        tokens=pick.tokens,
        room=room if shrinks else None,
        priority=dict(top),
    )
    held = view.held or Learned()
    held_cov, held_seen = coverage(set(held.eager), sets), coverage(set(held.eager), observed)
    # a shrink of the listing is worth what it was chosen for only while the sessions it
    # was shrunk for are still covered
    kept = min(1.0, held_seen / held.coverage) if held.coverage else 0.0
    held_gain = economy.gain(held_cov, held.tokens, listing if held.room is None else held.room, kept)
    gain = economy.gain(pick.coverage, pick.tokens, listing if candidate.room is None else candidate.room)
    prefix = pick.tokens + (listing if candidate.room is None else candidate.room)
    view.revise(candidate, Outlook(gain, held_gain, held_seen, prefix))
    assert view.held is not None
    return view.held


__all__ = [
    "CACHE_READ",
    "CACHE_WRITE",
    "REVISE_SESSIONS",
    "Choice",
    "Economy",
    "Learned",
    "LearnedView",
    "Outlook",
    "assured",
    "choose",
    "consider",
    "coverage",
]
