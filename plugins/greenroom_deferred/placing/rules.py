"""Where each tool starts, once per session, in this order: never_defer, the owner's
policy, rules, an eager hint (``ToolDescriptor.eager_hint``: an MCP tool's
``_meta["anthropic/alwaysLoad"]``, its server's ``always_load``), deferred groups, the
default mode; then the activation thresholds; then learning, which starts eager the tools
of the set it chose (``learning``), if they were deferred by default or as tools of a
deferred group (a group or MCP tool is then sent from the schema its catalog or listing
cache holds, and its first call loads the group), never against a rule or the owner's
``always``. A hint yields to the user's word (never_defer, a rule) and wins over what
applies to tools wholesale (their group's deferral, the default mode); nothing learned
undoes it (its source is not ``retainable``).

``place`` and ``with_learned`` are pure: descriptors, config and the learned set in, one
``Placement`` per tool out.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence

import attrs

from greenroom import ToolDescriptor, ToolPriors
from greenroom.kit import glob_matches as matches
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.costs import costs
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
        elif tool.eager_hint is not None:
            mode, source, detail = "eager", PlacementSource.HINT, f"hint: {tool.eager_hint}"
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


def place(
    catalog: Sequence[ToolDescriptor],
    *,
    grouped: Collection[str],
    config: DeferredConfig,
) -> Plan:
    """Place every tool of ``catalog`` by the config and the thresholds; ``grouped`` names
    the tools of deferred groups. Learning comes after (``with_learned``)."""
    shared: dict[tuple[Mode, str], Placement] = {}
    modes: dict[str, Placement] = {}
    would_defer: list[ToolDescriptor] = []
    for d in catalog:
        p = modes[d.name] = initial(d, config, grouped, shared)
        if p.mode == "deferred":
            would_defer.append(d)
    act = activation(would_defer, len(catalog) + 1, config)  # + 1: the model sees ToolSearch too
    if not act.active:
        inactive = Placement("eager", PlacementSource.INACTIVE, f"inactive ({act.why})")
        for name, p in modes.items():
            if p.mode == "deferred" and not p.source.keeps_deferred:
                modes[name] = inactive
        # only the thresholds undo a deferral here: the tools placed deferred are the list
        # counted above, less those, not found by another pass
        would_defer = [d for d in would_defer if modes[d.name].mode == "deferred"]
    return Plan(modes, act, {}, would_defer)


def with_learned(plan: Plan, learned: Mapping[str, str], priors: ToolPriors) -> Plan:
    """``plan`` with the tools of the learned set eager (``learned``: tool -> reason),
    each that was deferred by default or as a tool of a deferred group. Also when
    deferral is inactive: a group's tools stay deferred then, and learning still starts
    the ones the agent uses eager."""
    modes = plan.modes
    taken: dict[str, float] = {}
    for name, why in learned.items():
        placement = modes.get(name)
        if placement is None or placement.mode != "deferred" or not placement.source.yields_to_priors:
            continue
        modes[name] = Placement("eager", PlacementSource.PRIOR, why)
        taken[name] = priors.get(name)
    if not taken:
        return plan
    deferred = [d for d in plan.deferred if d.name not in taken]
    return Plan(modes, plan.activation, taken, deferred)
