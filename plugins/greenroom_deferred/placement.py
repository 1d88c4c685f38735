"""Where each tool starts, once per session, in this order: never_defer, the owner's
policy, rules, deferred groups, the default mode; then the activation thresholds; then
learned priors, which start a tool eager when its use probability clears its breakeven,
if it was deferred by default or as a tool of a deferred group (a group or MCP tool is
then sent from the schema its catalog or listing cache holds, and its first call loads
the group), never against a rule or the owner's ``always``.

``place`` is pure: descriptors, config and priors in, one ``Placement`` per tool out.

What learned priors put into the prompt prefix changes only at revisions (``LearnedView``,
kept per agent). Priors change after every session, and two things in the prefix follow
them: the tools they start eager and the names a truncated listing shows first. Followed
exactly, the prefix would change with nearly every session, and a provider's prompt
cache would be written again each time (at 1.25x the input price) instead of read (at
0.1x). So the learned-eager set and the listing's priorities are revised together, once
every ``REVISE_SESSIONS`` sessions (and at once while the agent has no learned-eager tool,
so the first ones show on the next session); in between, every session gets the same
learned prefix. At a revision a tool joins when its prior clears its breakeven and stays
while its prior is above ``KEEP_SHARE`` of it. The view lives in the runtime's profile
state: one long-lived process (``greenroom serve``, ``greenroom eval``, an application)
keeps it; separate ``greenroom run`` processes each place from the stored priors.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import attrs

from greenroom import ToolDescriptor, ToolPriors
from greenroom.kit import glob_matches as matches
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.costs import cost, costs
from greenroom_deferred.retention import breakeven
from greenroom_deferred.state import Mode, Placement, PlacementSource


@attrs.frozen
class Activation:
    """Whether deferral applies this session, why (in words), and what it saves."""

    active: bool
    why: str
    savings_tokens: float
    savings_chars4: float
    """Both measures over the tools counted to decide (see ``savings_until``)."""


@attrs.frozen
class Plan:
    """The placement of every tool, the activation it was made under, the tools that
    start eager because of learned priors (with their use probability), and the deferred
    tools in catalog order (what ``catalog.deferred_tools`` would find in ``modes``)."""

    modes: dict[str, Placement]
    activation: Activation
    learned: dict[str, float]
    deferred: list[ToolDescriptor]


def initial(
    tool: ToolDescriptor,
    config: DeferredConfig,
    grouped: Collection[str],
    shared: dict[tuple[Mode, str], Placement] | None = None,
) -> Placement:
    """A tool's placement by the config and its owner, before thresholds and priors.
    ``shared`` hands out one ``Placement`` per distinct value (they are frozen): a
    session over 100,000 tools holds a few hundred, not one per tool."""
    name = tool.name
    policy = tool.deferrable
    mode: Mode
    if name in config.never_defer:
        mode, source, detail = "eager", PlacementSource.NEVER_DEFER, "never_defer"
    elif policy == "never":
        mode, source, detail = "eager", PlacementSource.POLICY_NEVER, "policy never"
    elif policy == "always":
        mode, source, detail = "deferred", PlacementSource.POLICY_ALWAYS, "policy always"
    else:
        rule = next((r for r in config.rules if matches(r.tool, name)), None) if config.rules else None
        if rule is not None:  # a rule names tools on purpose: it wins over their group's deferral
            mode, source, detail = rule.mode, PlacementSource.RULE, f"rule {rule.tool!r}"
        elif name in grouped:
            mode, source, detail = "deferred", PlacementSource.GROUP, f"group {tool.group}"
        else:
            mode, source, detail = config.default_mode, PlacementSource.DEFAULT, "default"
    if shared is None:
        return Placement(mode, source, detail)
    # keyed without the source: an enum hashes in Python, and this runs once per tool; the
    # words name the source (each source has its own), and the check keeps it exact if not
    key = (mode, detail)
    found = shared.get(key)
    if found is None or found.source is not source:
        found = shared[key] = Placement(mode, source, detail)
    return found


SAVINGS_CHUNK = 64
"""Tools whose savings are counted at once by ``activation``; each chunk after the first
is twice the one before, so a decision that needs a few tools counts a few."""


def savings_until(tools: Sequence[ToolDescriptor], measure: str, enough: float) -> tuple[float, float, int]:
    """Savings of deferring ``tools`` in both measures (tokens, chars4), counted in order
    until the ``measure`` total exceeds ``enough`` or every tool is counted; and how
    many tools were counted. Past ``enough`` the rest cannot change the decision, and
    counting them would tokenize every schema of a catalog not counted before (seconds
    at 100,000 tools)."""
    tokens = chars4 = 0.0
    done, size = 0, SAVINGS_CHUNK
    while done < len(tools) and (chars4 if measure == "chars4" else tokens) <= enough:
        chunk = tools[done : done + size]
        tokens += sum(c.savings for c in costs(chunk, "tokens"))
        chars4 += sum(c.savings for c in costs(chunk, "chars4"))
        done += len(chunk)
        size *= 2
    return tokens, chars4, done


def activation(would_defer: Sequence[ToolDescriptor], visible: int, config: DeferredConfig) -> Activation:
    """Whether deferring ``would_defer`` is worth it with ``visible`` tools in sight. The
    savings are counted as far as the threshold needs (``savings_until``): exact up to
    ``beta_overhead``, a lower bound past it."""
    measure, overhead, least = config.savings_measure, config.beta_overhead, config.min_tools
    tokens, chars4, counted = savings_until(would_defer, measure, overhead)
    savings = chars4 if measure == "chars4" else tokens
    some = "" if counted == len(would_defer) else f" over the first {counted} tools"
    if config.enabled is True:
        active, why = True, "enabled = true"
    elif config.enabled is False:
        active, why = False, "enabled = false"
    elif visible < least:
        active, why = False, f"{visible} tools < min_tools {least}"
    elif savings <= overhead:
        active, why = False, f"savings {savings:.0f} ({measure}) <= beta_overhead {overhead}"
    else:
        active, why = True, f"{visible} tools >= {least} and savings {savings:.0f}{some} ({measure}) > {overhead}"
    return Activation(active, why, tokens, chars4)


KEEP_SHARE = 0.5
"""At a revision, a tool already learned eager stays eager while its prior is above this
share of its breakeven (a tool joins only above the breakeven itself), so a tool whose
prior hovers near the breakeven does not leave and come back at every revision."""


def place(
    catalog: Sequence[ToolDescriptor],
    *,
    grouped: Collection[str],
    config: DeferredConfig,
    priors: ToolPriors,
    kept: Collection[str] = (),
    held: Mapping[str, str] | None = None,
) -> Plan:
    """Place every tool of ``catalog``; ``grouped`` names the tools of deferred groups.

    Learned priors: with ``held`` (between revisions: tool -> the reason it was placed
    for at the last revision) exactly those tools start eager by priors; else (a
    revision) the tools whose prior clears their breakeven, and those of ``kept`` (eager
    before) whose prior is above ``KEEP_SHARE`` of it."""
    shared: dict[tuple[Mode, str], Placement] = {}
    modes: dict[str, Placement] = {}
    would_defer: list[ToolDescriptor] = []
    for d in catalog:
        p = modes[d.name] = initial(d, config, grouped, shared)
        if p.mode == "deferred":
            would_defer.append(d)
    act = activation(would_defer, len(catalog) + 1, config)  # + 1: the model sees ToolSearch too
    learned: dict[str, float] = {}
    if not act.active:
        inactive = Placement("eager", PlacementSource.INACTIVE, f"inactive ({act.why})")
        for name, p in modes.items():
            if p.mode == "deferred" and not p.source.keeps_deferred:
                modes[name] = inactive
    if config.prior_eager and priors.loaded:
        # also when deferral is inactive: a group's tools stay deferred then, and priors
        # still start the ones the agent uses eager
        named = held if held is not None else priors.p  # only these can start eager
        for d in would_defer if named else ():  # none (an agent's first session): no pass over the tools
            if d.name not in named or modes[d.name].mode != "deferred" or not modes[d.name].source.yields_to_priors:
                continue
            if held is not None:
                modes[d.name] = Placement("eager", PlacementSource.PRIOR, held[d.name])
                learned[d.name] = priors.get(d.name)
                continue
            prior = priors.p[d.name]
            c = cost(d, "tokens")
            be = breakeven(c.c, c.c_bar, config.retention.gamma)
            if prior > be:
                modes[d.name] = Placement("eager", PlacementSource.PRIOR, f"prior p={prior:.3f} > breakeven {be:.3f}")
                learned[d.name] = prior
            elif d.name in kept and prior > be * KEEP_SHARE:
                why = f"prior p={prior:.3f} > {KEEP_SHARE:g} x breakeven {be:.3f} (kept eager)"
                modes[d.name] = Placement("eager", PlacementSource.PRIOR, why)
                learned[d.name] = prior
    # only the thresholds and priors undo a deferral, never make one: while neither did,
    # the tools placed deferred are the list counted above, not found by another pass
    if not act.active or learned:
        would_defer = [d for d in would_defer if modes[d.name].mode == "deferred"]
    return Plan(modes, act, learned, would_defer)


# ------------------------------------------------------------------ learned prefix, per agent

REVISE_SESSIONS = 10
"""Sessions between two revisions of an agent's learned prefix: at most one cache write of
the prefix in that many sessions, for what priors learned meanwhile."""


@attrs.define(eq=False)
class LearnedView:
    """Profile scope: the learned-eager tools in force for the agent, with the reason
    each was placed for at the last revision (None before its first), the priorities its
    listings use, and the sessions since the revision."""

    eager: Mapping[str, str] | None = None
    priority: Mapping[str, float] = attrs.field(factory=dict)
    sessions: int = 0

    @property
    def due(self) -> bool:
        """Whether this session revises the view: the first, one while nothing is learned
        eager yet (so the first learned tools show at once), or every REVISE_SESSIONS."""
        return not self.eager or self.sessions >= REVISE_SESSIONS

    def held(self) -> Mapping[str, str] | None:
        """What a session between revisions places eager (None: revise now)."""
        return None if self.due else self.eager

    def settle(self, plan: Plan, priors: Mapping[str, float]) -> None:
        """Count a placed session; at a revision, take its learned set and the priors'
        priorities."""
        if self.due:
            self.eager = {name: plan.modes[name].detail for name in plan.learned}
            self.priority = dict(priors)
            self.sessions = 0
        self.sessions += 1
