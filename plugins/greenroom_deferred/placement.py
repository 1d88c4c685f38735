"""Where each tool starts, once per session, in this order: never_defer, the owner's
policy, rules, deferred groups, the default mode; then the activation thresholds; then
learned priors, which start a tool eager when its use probability clears its breakeven,
if it was deferred by default or as a tool of a deferred group (a group or MCP tool is
then sent from the schema its catalog or listing cache holds, and its first call loads
the group), never against a rule or the owner's ``always``.

Pure: descriptors, config and priors in, one ``Placement`` per tool out.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

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


def place(
    catalog: Sequence[ToolDescriptor], *, grouped: Collection[str], config: DeferredConfig, priors: ToolPriors
) -> Plan:
    """Place every tool of ``catalog``; ``grouped`` names the tools of deferred groups."""
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
    return Plan(modes, act, learned)
