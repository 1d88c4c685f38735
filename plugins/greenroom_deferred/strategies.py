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

from greenroom import RequestDraft, RunContext, Scripting, SystemSection, ToolDescriptor, count_tokens
from greenroom.kit import IdentityMemo
from greenroom_deferred.catalog import agent_tools, deferred_tools, find_descriptor, grouped_names
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.costs import cost
from greenroom_deferred.descriptors import DISPATCH_TOOL, LOAD_TOOL, OWN_TOOLS, SEARCH_TOOL
from greenroom_deferred.events import ToolDeferred, ToolPromoted
from greenroom_deferred.listing import SECTION_KEY, budgeted_listing, listing_budget
from greenroom_deferred.placing.learning import LearnedView
from greenroom_deferred.placing.retention import BetaState, should_redefer
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
        # each kept for the objects it was made from (the session's state, the catalog), and
        # for the placement revision where placements shape it
        self._sent: IdentityMemo[list[ToolDescriptor]] = IdentityMemo(1)
        self._listing: IdentityMemo[str] = IdentityMemo(1)
        self._eager: IdentityMemo[list[ToolDescriptor]] = IdentityMemo(1)
        self._promoted: IdentityMemo[list[ToolDescriptor]] = IdentityMemo(1)

    def forget_sent(self) -> None:
        """Build what is sent again on the next step (the run's scope changed it)."""
        for memo in (self._sent, self._listing, self._eager, self._promoted):
            memo.clear()

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
            st.discover(name)
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

    def eager_tools(self, ctx: RunContext, st: DeferralState, request: RequestDraft) -> list[ToolDescriptor]:
        """The request's tools that are not deferred (a tool with no placement, one a group
        loader added undeclared, is sent as is), then the eager tools of groups not loaded
        yet, from their catalogs (learned priors may start one eager: its first call loads
        the group). Kept while the request starts with the same tools and no placement
        changed: comparing two lists runs in C, filtering 100,000 tools in Python does not."""
        given = request.base_tools  # the same object from step to step while nothing changed
        hit = self._eager.lookup((st, given), st.revision)
        if hit is None:
            placed = st.modes.get  # inlined ``st.is_deferred``: this runs once per tool
            # the placement first: most tools of a large catalog are deferred, and that ends it
            out = [
                d for d in given if ((p := placed(d.name)) is None or p.mode != "deferred") and d.name not in OWN_TOOLS
            ]
            # an eager tool the request has is in ``out`` already (the plugin's own aside): a
            # set of the names in ``out``, not of every tool given, tells the ones it lacks
            sent = {d.name for d in out}
            waiting = [n for n, p in st.modes.items() if p.mode == "eager" and n not in sent and n not in OWN_TOOLS]
            out += [d for d in (find_descriptor(ctx, n) for n in waiting) if d is not None]
            hit = (self._eager.put((st, given), out, st.revision),)
        return list(hit[0])

    def listing(self, ctx: RunContext, st: DeferralState) -> str:
        """The listing of what is deferred now; rendered again only when the catalog or a
        placement changed (inject asks every step)."""
        deferred_all = deferred_tools(ctx, st)
        key = (ctx.catalog(), deferred_all)  # a new list whenever a placement changes
        hit = self._listing.lookup(key)
        if hit is not None:
            return hit[0]
        if not deferred_all and not ctx.groups:
            text = ""
        else:
            grouped = grouped_names(ctx)  # the group section names those already
            deferred = [d for d in deferred_all if d.name not in grouped] if grouped else deferred_all
            view = ctx.profile_state[LearnedView]
            # learning shrinks the listing as the sessions it covers need less of it
            room = view.room
            text = budgeted_listing(
                deferred,
                style=self.config.listing,
                budget=listing_budget(deferred_all, self.config.listing_budget) if room is None else room,
                hint=self.listing_hint + scripts_line(ctx),
                groups=list(ctx.groups.values()),
                priority=view.priority,
            )
            if room is None:  # what the listing costs with nothing learned: what a shrink saves
                view.listing_tokens = count_tokens(text)
        return self._listing.put(key, text)

    @staticmethod
    def put_listing(request: RequestDraft, text: str) -> None:
        if text:
            request.set_section(SystemSection(SECTION_KEY, text, stable=True))
        else:
            request.remove_section(SECTION_KEY)


def script_tool(ctx: RunContext) -> str | None:
    """The tool that runs the model's scripts in this run (``Scripting``), if any."""
    return ctx.state[Scripting].tool


def scripts_line(ctx: RunContext) -> str:
    """The listing's line for a model that writes scripts; empty when it does not."""
    tool = script_tool(ctx)
    if tool is None:
        return ""
    return f"\nIn {tool} scripts, call any tool by name: `await tools.NAME(args)`; {SEARCH_TOOL} gives signatures."


class Dispatch(Strategy):
    name = "dispatch"
    own = (SEARCH_TOOL, DISPATCH_TOOL)
    contributes_dispatcher = True
    schemas_in_results = True
    call_hint = f"Call these with {DISPATCH_TOOL}(tool_name, arguments)."
    listing_hint = f"Get a tool's schema with {SEARCH_TOOL}, then call it via {DISPATCH_TOOL}."

    def shape(self, ctx: RunContext, st: DeferralState, request: RequestDraft) -> None:
        # computed on the session's first step and never again: the prefix stays the same bytes
        hit = self._sent.lookup((st,))
        sent = (
            hit[0]
            if hit is not None
            else self._sent.put((st,), self.eager_tools(ctx, st, request) + self.own_tools(ctx))
        )
        request.tools = list(sent)
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
        sent = self.eager_tools(ctx, st, request)
        # a session resumed in a new runtime has not re-run its group loaders yet: tools it
        # promoted from a group keep their place from the catalog, and the first call loads
        # the group implicitly (worked out again only when a placement or the catalog changed)
        key = (st, ctx.catalog())
        hit = self._promoted.lookup(key, st.revision)
        if hit is None:
            present = {d.name for d in sent} | {d.name for d in own}
            promoted = [n for n, p in st.modes.items() if p.source is PlacementSource.PROMOTION and n not in present]
            found = [d for d in (find_descriptor(ctx, n) for n in promoted) if d is not None]
            hit = (self._promoted.put(key, found, st.revision),)
        request.tools = sent + hit[0] + own
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
        self._array: IdentityMemo[tuple[tuple[ToolDescriptor, ...], frozenset[str]]] = IdentityMemo(1)

    def shape(self, ctx: RunContext, st: DeferralState, request: RequestDraft) -> None:
        # the same tuple and set objects while nothing changes: sending every tool costs
        # identity checks from the second step on, not a pass over the catalog
        hit = self._array.lookup((st,), st.revision)
        if hit is None:
            sent = tuple(self._catalog_in_order(ctx, st))
            names = frozenset(d.name for d in sent if st.is_deferred(d.name))
            hit = (self._array.put((st,), (sent, names), st.revision),)
        request.tools, request.deferred = hit[0]
        request.remove_section(SECTION_KEY)  # the provider tells the model what it can search

    def forget_sent(self) -> None:
        super().forget_sent()
        self._array.clear()

    def _catalog_in_order(self, ctx: RunContext, st: DeferralState) -> list[ToolDescriptor]:
        """Every tool of the catalog (group tools not loaded yet included, hidden ones
        never), in the order they were first sent this session: the deferred set and the
        order are fixed, so the tools array is the same bytes on every step."""
        hit = self._sent.lookup((st,))
        if hit is not None:
            return list(hit[0])
        catalog = {d.name: d for d in agent_tools(ctx)}
        seen = set(st.native_order)
        st.native_order.extend(n for n in catalog if n not in seen)
        return list(self._sent.put((st,), [catalog[n] for n in st.native_order if n in catalog]))


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
