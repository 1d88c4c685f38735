"""The disclosure strategies, one object each: what the model is sent on every step, and
what finding a tool changes.

- ``Dispatch`` (default): the tools array and system prompt are computed once per session
  and never change; schemas arrive in tool results and the model calls found tools
  through ``deferred_tool_call``.
- ``Inject``: found tools join the tools array from the next step; a discounted Beta
  model per promoted tool re-defers the ones that go idle.
- ``Native``: every tool is sent, the deferred ones marked for the provider's hosted tool
  search; no search tool or listing of the plugin's own.

The config names a strategy; ``for_run`` turns it into an object once per run (native
works as dispatch on a model without hosted search), and nothing else tests the name.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import ClassVar

from greenroom import RequestDraft, RunContext, SystemSection, ToolDescriptor
from greenroom_deferred.catalog import agent_tools, deferred_tools, find_descriptor, grouped_names
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.costs import cost
from greenroom_deferred.descriptors import DISPATCH_TOOL, LOAD_TOOL, OWN_TOOLS, SEARCH_TOOL
from greenroom_deferred.events import ToolDeferred, ToolPromoted
from greenroom_deferred.listing import SECTION_KEY, budgeted_listing
from greenroom_deferred.retention import BetaState, should_redefer
from greenroom_deferred.state import DeferralState, Placement, PlacementSource


class Strategy:
    """What the model is sent, and what a discovery changes. One object per run; it
    caches what it sent per session state, so a stable prefix is built once."""

    name: ClassVar[str]
    own: ClassVar[tuple[str, ...]] = (SEARCH_TOOL,)
    """The plugin tools sent with the eager ones (plus load_tools when there are groups)."""
    contributes_dispatcher: ClassVar[bool] = False
    """Whether a runtime configured with this strategy gets ``deferred_tool_call``."""
    needs_hosted_search: ClassVar[bool] = False
    schemas_in_results: ClassVar[bool] = False
    """Whether load_tools returns the schemas (else they arrive in the tools array)."""
    call_hint: ClassVar[str] = "These tools are callable directly from your next step."
    listing_hint: ClassVar[str] = f"Get a tool with {SEARCH_TOOL}; it is callable from the next step."

    def __init__(self, config: DeferredConfig) -> None:
        self.config = config
        self._sent: tuple[int, list[ToolDescriptor]] | None = None
        self._listing: tuple[tuple[object, ...], str] | None = None
        self._eager: tuple[DeferralState, int, Sequence[ToolDescriptor], list[ToolDescriptor]] | None = None
        self._promoted: tuple[tuple[object, ...], int, list[ToolDescriptor]] | None = None

    def forget_sent(self) -> None:
        """Build what is sent again on the next step (the run's scope changed it)."""
        self._sent = None
        self._listing = None
        self._eager = None
        self._promoted = None

    # ---------------------------------------------------------------- the steps
    def started_eager(self, st: DeferralState, learned: Mapping[str, float]) -> None:
        """Tools placed eager by learned priors (with their use probability)."""

    def before_step(self, ctx: RunContext, st: DeferralState) -> None:
        """Called at every step before the request is shaped."""

    def shape(self, ctx: RunContext, st: DeferralState, request: RequestDraft) -> None:
        """Set the request's tools and the listing for this step."""
        raise NotImplementedError

    def observe(self, st: DeferralState, called: set[str]) -> None:
        """The tools the model called in the step that just ended (real names)."""

    def called(self, st: DeferralState, name: str) -> None:
        """A tool that is not newly discovered ran."""

    # ---------------------------------------------------------------- discoveries
    def promote(self, ctx: RunContext, st: DeferralState, names: Sequence[str], why: str) -> None:
        """The model received these tools' schemas (search, load_tools, a direct call)."""
        for name in names:
            if name not in st.discovered:
                st.discovered.append(name)
            if not st.is_deferred(name):
                continue
            self._discovered(ctx, st, name, why)
            ctx.emit(ToolPromoted(step=ctx.step, tool=name, reason=why))

    def _discovered(self, ctx: RunContext, st: DeferralState, name: str, why: str) -> None:
        """A deferred tool was found; the strategy may change its placement."""

    # ---------------------------------------------------------------- shared parts
    def own_tools(self, ctx: RunContext) -> list[ToolDescriptor]:
        names = [*self.own, LOAD_TOOL] if ctx.groups else list(self.own)
        return [ctx.tools[n].descriptor for n in names if n in ctx.tools]

    def eager_tools(self, st: DeferralState, request: RequestDraft) -> list[ToolDescriptor]:
        """The request's tools that are not deferred (a tool with no placement, one a group
        loader added undeclared, is sent as is). Kept while the request starts with the
        same tools and no placement changed: comparing two lists runs in C, filtering
        100,000 tools in Python does not."""
        cached = self._eager
        given = request.base_tools  # the same object from step to step while nothing changed
        if cached is not None and cached[0] is st and cached[1] == st.revision and cached[2] is given:
            return list(cached[3])
        out = [d for d in given if d.name not in OWN_TOOLS and not st.is_deferred(d.name)]
        self._eager = (st, st.revision, given, out)
        return list(out)

    def listing(self, ctx: RunContext, st: DeferralState) -> str:
        """The listing of what is deferred now; rendered again only when the catalog or a
        placement changed (inject asks every step)."""
        deferred_all = deferred_tools(ctx, st)
        key = (ctx.catalog(), deferred_all)  # a new list whenever a placement changes
        if self._listing is not None and all(a is b for a, b in zip(self._listing[0], key, strict=True)):
            return self._listing[1]
        if not deferred_all and not ctx.groups:
            text = ""
        else:
            grouped = grouped_names(ctx)  # the group section names those already
            deferred = [d for d in deferred_all if d.name not in grouped]
            text = budgeted_listing(
                deferred,
                style=self.config.listing,
                budget=self.config.listing_budget,
                hint=self.listing_hint,
                groups=list(ctx.groups.values()),
                priority=ctx.priors.p,
            )
        self._listing = (key, text)
        return text

    @staticmethod
    def put_listing(request: RequestDraft, text: str) -> None:
        if text:
            request.set_section(SystemSection(SECTION_KEY, text, stable=True))
        else:
            request.remove_section(SECTION_KEY)


class Dispatch(Strategy):
    name = "dispatch"
    own = (SEARCH_TOOL, DISPATCH_TOOL)
    contributes_dispatcher = True
    schemas_in_results = True
    call_hint = f"Call these with {DISPATCH_TOOL}(tool_name, arguments)."
    listing_hint = f"Get a tool's schema with {SEARCH_TOOL}, then call it via {DISPATCH_TOOL}."

    def shape(self, ctx: RunContext, st: DeferralState, request: RequestDraft) -> None:
        # computed on the session's first step and never again: the prefix stays the same bytes
        if self._sent is not None and self._sent[0] == id(st):
            request.tools = list(self._sent[1])
        else:
            request.tools = self.eager_tools(st, request) + self.own_tools(ctx)
            self._sent = (id(st), list(request.tools))
        if st.listing is None:
            st.listing = self.listing(ctx, st)
        self.put_listing(request, st.listing)


class Inject(Strategy):
    name = "inject"

    def started_eager(self, st: DeferralState, learned: Mapping[str, float]) -> None:
        for name, prior in learned.items():
            st.retention[name] = BetaState.from_prior(prior, self.config.retention, st.step)

    def before_step(self, ctx: RunContext, st: DeferralState) -> None:
        """Re-defer promoted tools that have gone idle."""
        cfg = self.config.retention
        for name, beta in list(st.retention.items()):
            placement = st.modes.get(name)
            if placement is None or placement.mode != "eager" or not placement.source.retainable:
                continue
            d = find_descriptor(ctx, name)
            if d is None:
                continue
            c = cost(d, "tokens")
            if should_redefer(beta, st.step, c.c, c.c_bar, cfg):
                detail = f"retention: idle {beta.idle_steps(st.step)} steps, upper90 {beta.upper90:.4f}"
                st.place(name, Placement("deferred", PlacementSource.RETENTION, detail))
                del st.retention[name]
                ctx.emit(ToolDeferred(step=ctx.step, tool=name, reason=detail))

    def shape(self, ctx: RunContext, st: DeferralState, request: RequestDraft) -> None:
        own = self.own_tools(ctx)
        sent = self.eager_tools(st, request)
        # a session resumed in a new runtime has not re-run its group loaders yet: tools it
        # promoted from a group keep their place from the catalog, and the first call loads
        # the group implicitly (worked out again only when a placement or the catalog changed)
        key = (st, ctx.catalog())
        kept = self._promoted
        if kept is None or kept[1] != st.revision or not all(a is b for a, b in zip(kept[0], key, strict=True)):
            present = {d.name for d in sent} | {d.name for d in own}
            promoted = [n for n, p in st.modes.items() if p.source is PlacementSource.PROMOTION and n not in present]
            found = [find_descriptor(ctx, n) for n in promoted]
            kept = self._promoted = (key, st.revision, [d for d in found if d is not None])
        request.tools = sent + kept[2] + own
        self.put_listing(request, self.listing(ctx, st))

    def observe(self, st: DeferralState, called: set[str]) -> None:
        for name, beta in st.retention.items():
            beta.observe(name in called, self.config.retention.omega, st.step)

    def called(self, st: DeferralState, name: str) -> None:
        if name in st.retention:
            st.retention[name].last_called = st.step

    def _discovered(self, ctx: RunContext, st: DeferralState, name: str, why: str) -> None:
        st.place(name, Placement("eager", PlacementSource.PROMOTION, f"promotion: {why}"))
        prior = ctx.priors.p.get(name, self.config.retention.default_prior)
        st.retention[name] = BetaState.from_prior(prior, self.config.retention, st.step)


class Native(Strategy):
    name = "native"
    own = ()
    contributes_dispatcher = True  # for the fallback to dispatch
    needs_hosted_search = True

    def __init__(self, config: DeferredConfig) -> None:
        super().__init__(config)
        self._array: tuple[DeferralState, int, tuple[ToolDescriptor, ...], frozenset[str]] | None = None

    def shape(self, ctx: RunContext, st: DeferralState, request: RequestDraft) -> None:
        # the same tuple and set objects while nothing changes: sending every tool costs
        # identity checks from the second step on, not a pass over the catalog
        kept = self._array
        if kept is None or kept[0] is not st or kept[1] != st.revision:
            sent = tuple(self._catalog_in_order(ctx, st))
            if kept is not None and kept[0] is st and kept[2] == sent:
                sent = kept[2]
            names = frozenset(d.name for d in sent if st.is_deferred(d.name))
            kept = self._array = (st, st.revision, sent, names)
        request.tools = kept[2]
        request.deferred = kept[3]
        request.remove_section(SECTION_KEY)  # the provider tells the model what it can search

    def forget_sent(self) -> None:
        super().forget_sent()
        self._array = None

    def _catalog_in_order(self, ctx: RunContext, st: DeferralState) -> list[ToolDescriptor]:
        """Every tool of the catalog (group tools not loaded yet included, hidden ones
        never), in the order they were first sent this session: the deferred set and the
        order are fixed, so the tools array is the same bytes on every step."""
        if self._sent is not None and self._sent[0] == id(st):
            return list(self._sent[1])
        catalog = {d.name: d for d in agent_tools(ctx)}
        seen = set(st.native_order)
        st.native_order.extend(n for n in catalog if n not in seen)
        sent = [catalog[n] for n in st.native_order if n in catalog]
        self._sent = (id(st), sent)
        return list(sent)


STRATEGIES: Mapping[str, type[Strategy]] = {s.name: s for s in (Dispatch, Inject, Native)}


def configured(config: DeferredConfig) -> type[Strategy]:
    """The strategy the config asks for."""
    return STRATEGIES[config.strategy]


def for_run(config: DeferredConfig, *, hosted_search: bool) -> Strategy:
    """The strategy in effect for a run: the configured one, or dispatch when it needs a
    hosted tool search the model does not have."""
    wanted = configured(config)
    if wanted.needs_hosted_search and not hosted_search:
        return Dispatch(config)
    return wanted(config)
