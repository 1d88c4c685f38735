"""Where each tool starts, once per session, in this order: never_defer, the owner's
policy, rules, deferred groups, the default mode; then the activation thresholds; then
learned priors, which start a tool eager when its use probability clears its breakeven,
if it was deferred by default or as a tool of a deferred group (a group or MCP tool is
then sent from the schema its catalog or listing cache holds, and its first call loads
the group), never against a rule or the owner's ``always``.

``place`` is pure: descriptors, config and priors in, one ``Placement`` per tool out.

What learned priors put into the prompt prefix is held steady between sessions (``LearnedView``,
kept per agent). Priors change after every session, and two things in the prefix follow
them: the tools they start eager and the names a truncated listing shows first. Followed
exactly, the prefix would change with nearly every session, and a provider's prompt
cache would be written again each time instead of read. So a tool learned eager stays
eager while its prior is above a share of its breakeven (``KEEP_SHARE``), and the
listing's priorities are taken from the priors only when the learned-eager set changes
or every ``REFRESH_SESSIONS`` sessions. The view lives in the runtime's profile state: one
long-lived process (``greenroom serve``, ``greenroom eval``, an application) keeps it;
separate ``greenroom run`` processes each start from the stored priors.
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
"""A tool starts eager when its prior is above its breakeven, and once learned eager it
stays eager while its prior is above KEEP_SHARE x its breakeven. The band keeps a tool
whose prior hovers near the breakeven from moving in and out of the tools array session
after session: each move changes the prompt prefix, and a changed prefix is written to
the provider's cache again at full price."""


def place(
    catalog: Sequence[ToolDescriptor],
    *,
    grouped: Collection[str],
    config: DeferredConfig,
    priors: ToolPriors,
    kept: Collection[str] = (),
) -> Plan:
    """Place every tool of ``catalog``; ``grouped`` names the tools of deferred groups,
    ``kept`` the tools learned priors placed eager for the agent's previous session."""
    modes = {d.name: initial(d, config, grouped) for d in catalog}
    would_defer = [d for d in catalog if modes[d.name].mode == "deferred"]
    act = activation(would_defer, len(catalog) + 1, config)  # + 1: the model sees ToolSearch too
    learned: dict[str, float] = {}
    if not act.active:
        for name, p in modes.items():
            if p.mode == "deferred" and not p.source.keeps_deferred:
                modes[name] = Placement("eager", PlacementSource.INACTIVE, f"inactive ({act.why})")
    elif config.prior_eager and priors.loaded:
        for d in would_defer:
            p = modes[d.name]
            prior = priors.p.get(d.name)
            if prior is None or not p.source.yields_to_priors:
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

REFRESH_SESSIONS = 25
"""Sessions after which the listing's priorities are taken from the priors again even
though the learned-eager set did not change (one cache write in that many sessions)."""


@attrs.define(eq=False)
class LearnedView:
    """Profile scope: the learned-eager tools of the agent's last session (None before
    its first) and the priorities its listings use."""

    eager: frozenset[str] | None = None
    priority: Mapping[str, float] = attrs.field(factory=dict)
    sessions: int = 0

    @property
    def kept(self) -> frozenset[str]:
        return self.eager or frozenset()

    def settle(self, eager: frozenset[str], priors: Mapping[str, float]) -> None:
        """A session was placed with ``eager`` learned-eager tools: take the priors'
        priorities again if the set changed or the view is old; else keep them."""
        self.sessions += 1
        if eager != self.eager or self.sessions >= REFRESH_SESSIONS:
            self.eager = eager
            self.priority = dict(priors)
            self.sessions = 0
