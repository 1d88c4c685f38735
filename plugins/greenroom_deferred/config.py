"""Configuration of the deferred-tools plugin (``[plugins.deferred-tools]``).

Bounds are the fields' attrs validators, declared once: ``config_schema`` derives the
JSON Schema's bounds from them (core's ``schema_for_attrs`` reads them).
"""

from __future__ import annotations

from typing import Any, Literal

import attrs

from greenroom.kit import check_glob

_ge, _gt, _le = attrs.validators.ge, attrs.validators.gt, attrs.validators.le


def _glob(instance: Any, attribute: Any, value: str) -> None:
    check_glob(value)


@attrs.frozen
class Rule:
    """One placement rule: the first rule whose pattern matches a tool decides its mode.

    Args:
        tool: Exact tool name or glob (case-sensitive, whole name; ``*``, ``?``,
            ``[...]``, ``{a,b}``).
        mode: ``eager`` (full schema sent every step) or ``deferred`` (found by search).
    """

    tool: str = attrs.field(validator=_glob)
    mode: Literal["eager", "deferred"]


@attrs.frozen
class RetentionConfig:
    """The discounted Beta model that re-defers idle promoted tools (inject strategy).

    Args:
        omega: Discount applied to both Beta parameters after every step.
        n0: Pseudo-count of the prior (alpha = p*n0, beta = (1-p)*n0).
        defer_after: Steps a promoted tool must sit idle before it may be re-deferred;
            counted from its promotion or its last call, whichever is later.
        thresh_mult: Re-defer when the 90% upper bound falls below breakeven times this.
        gamma: Tokens a step costs in the breakeven frequency (c - c_bar) / gamma.
        default_prior: Use probability assumed for a tool without a learned prior.
    """

    omega: float = attrs.field(default=0.95, validator=[_gt(0), _le(1)])
    n0: float = attrs.field(default=5.0, validator=_gt(0))
    defer_after: int = 5
    thresh_mult: float = 0.5
    gamma: float = attrs.field(default=2000.0, validator=_gt(0))
    default_prior: float = attrs.field(default=0.01, validator=[_ge(0), _le(1)])


@attrs.frozen
class DeferredConfig:
    """What the model sees of the agent's tools.

    Args:
        enabled: true (always defer), false (never), or unset: automatic, on when the
            agent has at least ``min_tools`` tools AND deferring saves more than
            ``beta_overhead`` tokens.
        strategy: ``dispatch`` keeps the tools array and system prompt byte-identical and
            sends schemas in tool results; ``inject`` adds found tools to the tools array;
            ``native`` sends every visible tool, marks the deferred ones for the
            provider's hosted tool search (Anthropic) and adds no search tool or listing
            of its own; with a model that has no hosted search it works as ``dispatch``.
        listing: How deferred tools are listed in the system prompt: ``descriptions``
            (name and first line, grouped), ``names``, or ``groups`` (each group with
            its count, and names only as far as the budget allows).
        listing_budget: The budget, in tokens, of what the plugin adds to the prompt
            prefix (0: no limit): the listing, and with learned priors the learned eager
            schemas (at most half of it); a search's schemas take at most a quarter of
            it. The listing also never costs more than a quarter of the schemas it
            stands for. A listing over its budget steps down to names only, then to
            every group with its count and as many names as fit (learned ones first,
            then spread across groups); it shrinks further as a learned eager set covers
            more sessions.
        rules: Ordered placement rules; the first match wins.
        default_mode: Mode of a tool that no rule matches.
        never_defer: Tools that always keep their full schema.
        min_tools: Automatic activation needs at least this many visible tools.
        beta_overhead: Automatic activation needs savings strictly greater than this.
        savings_measure: ``tokens`` (exact o200k counts) or ``chars4`` (len/4, as the
            reference formula) for the activation threshold; both are reported.
        max_results: Results per ToolSearch call.
        prior_eager: Let learning start tools eager: the set of tools that covers the
            most sessions for what it costs (a session is covered when every tool it
            calls is sent), and shrink the listing for the sessions it covers. false:
            learning only orders the listing's names and boosts search.
        browse_limit: Names listed by an empty query or a search that found nothing.
        retention: The re-deferral model (inject strategy).
    """

    enabled: bool | None = None
    strategy: Literal["dispatch", "inject", "native"] = "dispatch"
    listing: Literal["descriptions", "names", "groups"] = "descriptions"
    listing_budget: int = 8000
    rules: tuple[Rule, ...] = ()
    default_mode: Literal["eager", "deferred"] = "deferred"
    never_defer: tuple[str, ...] = ()
    min_tools: int = attrs.field(default=15, validator=_ge(0))
    beta_overhead: int = attrs.field(default=1136, validator=_ge(0))
    savings_measure: Literal["tokens", "chars4"] = "tokens"
    max_results: int = attrs.field(default=5, validator=_ge(1))
    prior_eager: bool = True
    browse_limit: int = attrs.field(default=60, validator=_ge(1))
    retention: RetentionConfig = RetentionConfig()
