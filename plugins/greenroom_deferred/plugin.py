"""The deferred-tools plugin's hook wiring: each hook hands its phase to the room that owns it.

- RunStart: choose the run's strategy (``strategies``).
- BeforeInference: on the run's first step, when the run's scope is known, place every
  tool once per session (``placement``), or drop what the scope now hides from a
  resumed session's placements (the listing is then rebuilt); then the strategy shapes
  the request (tools, listing).
- AfterInference: the provider's hosted searches count as discoveries; the strategy
  sees what was called (inject's retention model).
- resolve: a provider's client-side search call becomes a ``ToolSearch`` call
  (``tools.client_search``, native strategy); unwrap ``deferred_tool_call``
  (``tools.unwrap``); core then loads the tool's group if it is not loaded yet.
- AfterToolExecute: a deferred tool called without a search counts as discovered, and a
  group first used by calling one of its tools counts as loaded whole.
- Contributions: the state types (``DeferralState`` per session, ``DeferralRun`` per
  run: the run's strategy lives in the run, never on this instance, which every run of
  the runtime shares), the plugin's own tools (``tools``) and the placements
  ``greenroom inspect`` shows. It adds no command: ``greenroom eval`` and
  ``greenroom bench``, which measure it, are the lab's (``greenroom_lab``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from greenroom import (
    ModelResponse,
    Plugin,
    PluginWarning,
    RequestDraft,
    RunContext,
    Scope,
    StateRegistry,
    Tool,
    ToolCall,
    ToolGroup,
    ToolPlacement,
    ToolResult,
    ToolSet,
    count_tokens,
    hookimpl,
)
from greenroom.kit import descriptor_cost
from greenroom_deferred.catalog import agent_tools, find_descriptor, grouped_names, keep_deferred
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.costs import cost
from greenroom_deferred.descriptors import OWN_TOOLS
from greenroom_deferred.events import ListingRebuilt, SearchPerformed
from greenroom_deferred.listing import budgeted_listing, listing_budget
from greenroom_deferred.placing.learning import Learned, LearnedView, consider
from greenroom_deferred.placing.rules import Plan, initial, place, with_learned
from greenroom_deferred.run_state import DeferralRun, run_strategy
from greenroom_deferred.state import DeferralState, forget_hidden, upgrade_saved_state
from greenroom_deferred.strategies import Dispatch, Strategy, configured, for_run
from greenroom_deferred.tools import Dispatcher, LoadTools, ToolSearch, client_search, target_name, unwrap


def _state(ctx: RunContext) -> DeferralState:
    return ctx.session_state[DeferralState]


class DeferredToolsPlugin(Plugin):
    """Decides what the model sees of the agent's tools, and lets it find the rest."""

    name = "deferred-tools"
    config_class = DeferredConfig
    nonblocking = True
    """Its hooks compute and never wait (no I/O, locks or sleep): they run on the event
    loop, one at a time, not in worker threads, so a run's state and the strategy's
    memos are never changed by two threads at once (the calls of one turn included)."""

    config: DeferredConfig

    def strategy(self, ctx: RunContext) -> Strategy:
        """The strategy in effect for the run ``ctx`` is for (chosen at its RunStart)."""
        return run_strategy(ctx, self.config)

    # ------------------------------------------------------------------ contributions
    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(DeferralState, Scope.SESSION, owner=self.name, upgrade=upgrade_saved_state)
        registry.register(DeferralRun, Scope.RUN, owner=self.name)
        registry.register(LearnedView, Scope.PROFILE, owner=self.name)

    @hookimpl
    def greenroom_tools(self, tools: ToolSet, groups: Mapping[str, ToolGroup]) -> Iterable[Tool]:
        out: list[Tool] = [ToolSearch(self.config)]
        if configured(self.config).contributes_dispatcher:
            out.append(Dispatcher(self.config))
        if groups:
            out.append(LoadTools(self.config))
        return out

    @hookimpl
    def greenroom_inspect_tools(self, ctx: RunContext) -> Mapping[str, ToolPlacement] | None:
        st = _state(ctx)
        if not st.placed:
            return None
        return {name: ToolPlacement(p.mode, p.source.value, p.detail) for name, p in st.modes.items()}

    # ------------------------------------------------------------------ phases
    @hookimpl
    def greenroom_run_start(self, ctx: RunContext) -> None:
        st = _state(ctx)
        strategy = for_run(self.config, hosted_search=ctx.hosted_tool_search)
        wanted = configured(self.config)
        if not isinstance(strategy, wanted) and st.strategy != strategy.name:  # once per session
            ctx.emit(
                PluginWarning(
                    plugin=self.name,
                    hook="greenroom_run_start",
                    message=(
                        f"strategy = {wanted.name} needs a model with native tool search (Anthropic models; "
                        f"OpenAI's gpt-5.4 and later through the Responses API); {ctx.model_name} has none, "
                        f"so deferred tools work as with strategy = {Dispatch.name}"
                    ),
                )
            )
        st.strategy = strategy.name
        run = ctx.state[DeferralRun]
        run.strategy, run.settled = strategy, False

    def _settle(self, ctx: RunContext, st: DeferralState, strategy: Strategy) -> None:
        """Once per run, after the runtime worked out what the run may use: place every
        tool (a new session), or forget the tools a resumed session placed that are now
        hidden, so its frozen listing is rebuilt without them."""
        run = ctx.state[DeferralRun]
        if run.settled:
            return
        run.settled = True
        if not st.placed:
            plan = place(agent_tools(ctx), grouped=grouped_names(ctx, deferred_only=True), config=self.config)
            if ctx.priors.loaded:
                learned = self._learned(ctx, plan)
                plan = with_learned(plan, learned.eager, ctx.priors)
            st.modes = plan.modes
            st.revision += 1
            st.active, st.activation = plan.activation.active, plan.activation.why
            st.savings_tokens, st.savings_chars4 = plan.activation.savings_tokens, plan.activation.savings_chars4
            st.placed = True
            keep_deferred(ctx, st, plan.deferred)
            run.placed_for = ctx.catalog()  # every tool it has was placed just now
            strategy.started_eager(st, plan.learned)
            return
        hidden = ctx.hidden
        stale = [n for n in st.modes if n in hidden] if hidden else []
        if stale:
            forget_hidden(st, hidden)
            strategy.forget_sent()
            shown = tuple(stale[: ListingRebuilt.SHOWN])
            ctx.emit(ListingRebuilt(step=ctx.step, hidden=shown, count=len(stale)))

    def _learned(self, ctx: RunContext, plan: Plan) -> Learned:
        """What learning puts into this session's prefix (``learning.consider``)."""

        def schema_cost(name: str) -> tuple[float, float] | None:
            d = find_descriptor(ctx, name)
            return None if d is None else (cost(d, "tokens").savings, float(descriptor_cost(d, "definition_tokens")))

        cfg = self.config
        view = ctx.profile_state[LearnedView]
        if view.listing_tokens is None and ctx.priors.sets:
            # what a shrink of the listing saves: its size with nothing learned, rendered
            # once (the strategy measures it again whenever it renders it whole)
            grouped = grouped_names(ctx)
            deferred = [d for d in plan.deferred if d.name not in grouped]
            groups = list(ctx.groups.values())
            hint = self.strategy(ctx).listing_hint
            budget = listing_budget(plan.deferred, cfg.listing_budget)
            text = budgeted_listing(deferred, style=cfg.listing, budget=budget, hint=hint, groups=groups)
            view.listing_tokens = count_tokens(text)
        return consider(
            view,
            priors=ctx.priors,
            modes=plan.modes,
            costs=schema_cost,
            budget=cfg.listing_budget,
            results=cfg.max_results,
            learn_eager=cfg.prior_eager,
        )

    @hookimpl
    def greenroom_before_inference(self, ctx: RunContext, request: RequestDraft) -> None:
        st = _state(ctx)
        strategy = self.strategy(ctx)
        self._settle(ctx, st, strategy)
        self._newcomers(ctx, st)
        st.step += 1
        strategy.before_step(ctx, st)
        if not st.active and not st.deferred():
            # below the thresholds nothing changes: the plugin's own tools are not sent either
            request.tools = [d for d in request.base_tools if d.name not in OWN_TOOLS]
            return
        strategy.shape(ctx, st, request)

    def _newcomers(self, ctx: RunContext, st: DeferralState) -> None:
        """Place the tools a deferred group declares that joined after the session was
        placed (an MCP server that listed new tools while it ran), by the same rules: a
        new tool of a deferred server is deferred, and found by search."""
        run = ctx.state[DeferralRun]
        catalog = ctx.catalog()
        if run.placed_for is catalog:
            return
        run.placed_for = catalog
        if not st.active:
            return  # nothing is deferred: every tool is sent as it is
        grouped, modes = grouped_names(ctx, deferred_only=True), st.modes
        for d in agent_tools(ctx):
            if d.name not in modes and d.name in grouped:
                st.place(d.name, initial(d, self.config, grouped))

    @hookimpl
    def greenroom_after_inference(self, ctx: RunContext, response: ModelResponse) -> None:
        st = _state(ctx)
        strategy = self.strategy(ctx)
        for search in response.searches:
            # the provider searched on its side: report it like a ToolSearch call
            mode = "hosted" if search.error is None else f"hosted error {search.error}"
            results = tuple((n, 1.0) for n in search.tools)
            ctx.emit(SearchPerformed(step=ctx.step, query=search.query, mode=mode, results=results))
            strategy.promote(ctx, st, list(search.tools), f"hosted search {search.query!r}")
        if st.retention:
            strategy.observe(st, {target_name(c) for c in response.tool_calls})

    # ------------------------------------------------------------------ calls
    @hookimpl
    def greenroom_resolve_tool_call(self, ctx: RunContext, call: ToolCall) -> ToolCall | None:
        # a provider's client-side search is a ToolSearch call; the real call inside a
        # dispatcher call; core then loads its group if need be
        return client_search(call, self.strategy(ctx), ctx.tools) or unwrap(call)

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        st = _state(ctx)
        group = ctx.group_of(call.name)
        if group is not None and group.id not in st.expansion and call.name in ctx.tools:
            st.expansion[group.id] = None  # called by name, its whole group was loaded
        strategy = self.strategy(ctx)
        if not st.is_deferred(call.name) or st.has_discovered(call.name):
            strategy.called(st, call.name)
            return
        # called by name without a search: it works, and now counts as discovered
        strategy.promote(ctx, st, [call.name], "called without search")
