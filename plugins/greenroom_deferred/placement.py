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
from greenroom_deferred.state import Placement, PlacementSource


@attrs.frozen
class Activation:
    """Whether deferral applies this session, why (in words), and what it saves."""

    active: bool
    why: str
    savings_tokens: float
    savings_chars4: float


@attrs.frozen
class Plan:
    """The placement of every tool, the activation it was made under, and the tools
    that start eager because of learned priors (with their use probability)."""

    modes: dict[str, Placement]
    activation: Activation
    learned: dict[str, float]


def initial(tool: ToolDescriptor, config: DeferredConfig, grouped: Collection[str]) -> Placement:
    """A tool's placement by the config and its owner, before thresholds and priors."""
    name = tool.name
    if name in config.never_defer:
        return Placement("eager", PlacementSource.NEVER_DEFER, "never_defer")
    if tool.deferrable == "never":
        return Placement("eager", PlacementSource.POLICY_NEVER, "policy never")
    if tool.deferrable == "always":
        return Placement("deferred", PlacementSource.POLICY_ALWAYS, "policy always")
    rule = next((r for r in config.rules if matches(r.tool, name)), None)
    if rule is not None:  # a rule names tools on purpose: it wins over their group's deferral
        return Placement(rule.mode, PlacementSource.RULE, f"rule {rule.tool!r}")
    if name in grouped:
        return Placement("deferred", PlacementSource.GROUP, f"group {tool.group}")
    return Placement(config.default_mode, PlacementSource.DEFAULT, "default")


def activation(would_defer: Sequence[ToolDescriptor], visible: int, config: DeferredConfig) -> Activation:
    """Whether deferring ``would_defer`` is worth it with ``visible`` tools in sight."""
    tokens = sum(c.savings for c in costs(would_defer, "tokens"))
    chars4 = sum(c.savings for c in costs(would_defer, "chars4"))
    savings = chars4 if config.savings_measure == "chars4" else tokens
    measure, overhead, least = config.savings_measure, config.beta_overhead, config.min_tools
    if config.enabled is True:
        active, why = True, "enabled = true"
    elif config.enabled is False:
        active, why = False, "enabled = false"
    elif visible < least:
        active, why = False, f"{visible} tools < min_tools {least}"
    elif savings <= overhead:
        active, why = False, f"savings {savings:.0f} ({measure}) <= beta_overhead {overhead}"
    else:
        active, why = True, f"{visible} tools >= {least} and savings {savings:.0f} ({measure}) > {overhead}"
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
    modes = {d.name: initial(d, config, grouped) for d in catalog}
    would_defer = [d for d in catalog if modes[d.name].mode == "deferred"]
    act = activation(would_defer, len(catalog) + 1, config)  # + 1: the model sees ToolSearch too
    learned: dict[str, float] = {}
    if not act.active:
        for name, p in modes.items():
            if p.mode == "deferred" and not p.source.keeps_deferred:
                modes[name] = Placement("eager", PlacementSource.INACTIVE, f"inactive ({act.why})")
    if config.prior_eager and priors.loaded:
        # also when deferral is inactive: a group's tools stay deferred then, and priors
        # still start the ones the agent uses eager
        for d in would_defer:
            if modes[d.name].mode != "deferred" or not modes[d.name].source.yields_to_priors:
                continue
            if held is not None:
                if d.name in held:
                    modes[d.name] = Placement("eager", PlacementSource.PRIOR, held[d.name])
                    learned[d.name] = priors.get(d.name)
                continue
            prior = priors.p.get(d.name)
            if prior is None:
                continue
            c = cost(d, "tokens")
            be = breakeven(c.c, c.c_bar, config.retention.gamma)
            if prior > be:
                modes[d.name] = Placement("eager", PlacementSource.PRIOR, f"prior p={prior:.3f} > breakeven {be:.3f}")
                learned[d.name] = prior
            elif d.name in kept and prior > be * KEEP_SHARE:
                why = f"prior p={prior:.3f} > {KEEP_SHARE:g} x breakeven {be:.3f} (kept eager)"
                modes[d.name] = Placement("eager", PlacementSource.PRIOR, why)
                learned[d.name] = prior
    return Plan(modes, act, learned)


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
