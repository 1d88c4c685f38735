"""The deferred-tools plugin: placement, ToolSearch, dispatch, groups and retention.

Phases:
- RunStart: place every visible tool once per session (rules, policies, priors,
  activation thresholds) and seed retention from the agent's priors.
- BeforeInference: send eager tools (plus promoted ones in inject mode) and the listing.
  In dispatch mode both are computed once per session, so the prefix never changes.
  In native mode every visible tool is sent, the deferred ones named in
  ``request.deferred`` for the provider's hosted search, in an order fixed per session.
- AfterInference: feed the step's calls into the retention model (inject); count the
  provider's hosted searches as discoveries (native).
- resolve: unwrap ``deferred_tool_call``; load a tool's group when it is first needed.
- BeforeToolExecute (last): answer ToolSearch and load_tools, which need run state.
- AfterToolExecute: a deferred tool called without a search counts as discovered.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from greenroom import (
    Decision,
    Plugin,
    RunContext,
    Scope,
    SearchQuery,
    ToolCall,
    ToolDescriptor,
    ToolResult,
    hookimpl,
)
from greenroom import events as ev
from greenroom.context import RunOutcome
from greenroom.models import ModelResponse, RequestDraft, SystemSection
from greenroom.search import resolve_select
from greenroom.state import StateRegistry
from greenroom.tokens import compact_json, count_tokens
from greenroom.tools import Tool, ToolCallContext
from greenroom.tools.groups import ToolGroup
from greenroom.tools.toolset import ToolSet
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.costs import chars4_cost, cost
from greenroom_deferred.events import SearchPerformed, ToolDeferred, ToolPromoted
from greenroom_deferred.globs import matches
from greenroom_deferred.listing import SECTION_KEY, first_line, render_listing
from greenroom_deferred.retention import BetaState, breakeven, should_redefer
from greenroom_deferred.state import DeferralState, Placement

SEARCH_TOOL = "ToolSearch"
DISPATCH_TOOL = "deferred_tool_call"
LOAD_TOOL = "load_tools"
OWN_TOOLS = (SEARCH_TOOL, DISPATCH_TOOL, LOAD_TOOL)


class _PluginTool:
    """A tool whose calls the plugin answers in BeforeToolExecute (it needs run state,
    which tools never see); reaching ``execute`` means the plugin was bypassed."""

    timeout: float | None = None

    def __init__(self, descriptor: ToolDescriptor) -> None:
        self._descriptor = descriptor

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        return ToolResult.error(
            f"{self._descriptor.name} is handled by the deferred-tools plugin, which did not answer this call"
        )


def search_descriptor(max_results: int) -> ToolDescriptor:
    return ToolDescriptor(
        name=SEARCH_TOOL,
        description=(
            "Find deferred tools and load their full schemas. Query forms: plain keywords "
            "('create issue'), '+word rest' to require a word, 'select:name_a,name_b' for exact "
            "names, or an empty query to browse."
        ),
        parameters={
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Keywords, +required words, or select:a,b."},
                "max_results": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "description": f"How many tools to return (default {max_results}).",
                },
            },
            "required": ["query"],
            "additionalProperties": False,
        },
        deferrable="never",
    )


DISPATCH_DESCRIPTOR = ToolDescriptor(
    name=DISPATCH_TOOL,
    description="Call a deferred tool whose schema you have loaded.",
    parameters={
        "type": "object",
        "properties": {
            "tool_name": {"type": "string"},
            "arguments": {"type": "object", "description": "Matching that tool's schema."},
        },
        "required": ["tool_name", "arguments"],
        "additionalProperties": False,
    },
    deferrable="never",
)

LOAD_DESCRIPTOR = ToolDescriptor(
    name=LOAD_TOOL,
    description="Load a tool group from the catalog (all its tools, or only the names given).",
    parameters={
        "type": "object",
        "properties": {
            "group_id": {"type": "string", "description": "A group id from the catalog."},
            "tool_names": {
                "type": "array",
                "items": {"type": "string"},
                "description": "Load only these tools of the group.",
            },
        },
        "required": ["group_id"],
        "additionalProperties": False,
    },
    deferrable="never",
)


def format_functions(tools: Sequence[ToolDescriptor]) -> str:
    """``<functions>`` with one ``<function>{json}</function>`` line per tool; the JSON has
    sorted keys, so the same tool always renders to the same bytes."""
    lines = ["<functions>"]
    lines += [f"<function>{json.dumps(t.to_json(), sort_keys=True, ensure_ascii=False)}</function>" for t in tools]
    lines.append("</functions>")
    return "\n".join(lines)


class DeferredToolsPlugin(Plugin):
    """Decides what the model sees of the agent's tools, and lets it find the rest."""

    name = "deferred-tools"
    config_class = DeferredConfig

    config: DeferredConfig
    _mode: str = ""  # the strategy in effect, set at RunStart

    @classmethod
    def config_schema(cls) -> dict[str, Any]:
        schema = super().config_schema()
        props = schema["properties"]
        props["min_tools"]["minimum"] = 0
        props["beta_overhead"]["minimum"] = 0
        props["max_results"]["minimum"] = 1
        props["browse_limit"]["minimum"] = 1
        ret = props["retention"]["properties"]
        ret["omega"].update(exclusiveMinimum=0, maximum=1)
        ret["n0"]["exclusiveMinimum"] = 0
        ret["gamma"]["exclusiveMinimum"] = 0
        ret["default_prior"].update(minimum=0, maximum=1)
        return schema

    # ------------------------------------------------------------------ contributions
    @hookimpl
    def greenroom_register_state(self, registry: StateRegistry) -> None:
        registry.register(DeferralState, Scope.SESSION, owner=self.name)

    @hookimpl
    def greenroom_tools(self, tools: ToolSet, groups: Mapping[str, ToolGroup]) -> Iterable[Tool]:
        # native keeps dispatch's tools: it falls back to dispatch on a model without
        # hosted search, and strips them from the request when it does not
        out: list[Tool] = [_PluginTool(search_descriptor(self.config.max_results))]
        if self.config.strategy in ("dispatch", "native"):
            out.append(_PluginTool(DISPATCH_DESCRIPTOR))
        if groups:
            out.append(_PluginTool(LOAD_DESCRIPTOR))
        return out

    # ------------------------------------------------------------------ helpers
    def _state(self, ctx: RunContext) -> DeferralState:
        return ctx.session_state[DeferralState]

    @property
    def strategy(self) -> str:
        """The strategy in effect: the configured one, except that ``native`` works as
        ``dispatch`` when the model has no hosted tool search."""
        if self._mode:
            return self._mode
        return "dispatch" if self.config.strategy == "native" else self.config.strategy

    def _own_tools(self, ctx: RunContext) -> list[ToolDescriptor]:
        names = [SEARCH_TOOL, DISPATCH_TOOL] if self.strategy == "dispatch" else [SEARCH_TOOL]
        if ctx.groups:
            names.append(LOAD_TOOL)
        return [ctx.tools[n].descriptor for n in names if n in ctx.tools]

    def _catalog(self, ctx: RunContext) -> list[ToolDescriptor]:
        """Every tool the agent may use: loaded ones, then group tools not loaded yet."""
        seen: set[str] = set()
        out: list[ToolDescriptor] = []
        for d in ctx.visible_descriptors():
            if d.name not in OWN_TOOLS:
                out.append(d)
                seen.add(d.name)
        for g in ctx.groups.values():
            for d in g.known:
                if d.name not in seen and d.name not in ctx.hidden:
                    out.append(d)
                    seen.add(d.name)
        return out

    def _descriptor(self, ctx: RunContext, name: str) -> ToolDescriptor | None:
        if name in ctx.tools:
            return ctx.tools[name].descriptor
        for g in ctx.groups.values():
            for d in g.known:
                if d.name == name:
                    return d
        return None

    def _prior(self, ctx: RunContext, name: str) -> float:
        priors = ctx.priors
        return priors.p.get(name, self.config.retention.default_prior)

    # ------------------------------------------------------------------ placement
    def _place(self, ctx: RunContext, st: DeferralState) -> None:
        cfg = self.config
        catalog = self._catalog(ctx)
        grouped = {d.name for g in ctx.groups.values() if g.defer for d in g.known}
        modes: dict[str, Placement] = {}
        for d in catalog:
            if d.name in cfg.never_defer:
                modes[d.name] = Placement("eager", "never_defer")
            elif d.deferrable == "never":
                modes[d.name] = Placement("eager", "policy never")
            elif d.deferrable == "always":
                modes[d.name] = Placement("deferred", "policy always")
            elif d.name in grouped:
                modes[d.name] = Placement("deferred", f"group {d.group}")
            else:
                rule = next((r for r in cfg.rules if matches(r.tool, d.name)), None)
                if rule is not None:
                    modes[d.name] = Placement(rule.mode, f"rule {rule.tool!r}")
                else:
                    modes[d.name] = Placement(cfg.default_mode, "default")
        # activation: how much deferring the would-be-deferred tools saves
        would_defer = [d for d in catalog if modes[d.name].mode == "deferred"]
        st.savings_tokens = sum(cost(d, "tokens").savings for d in would_defer)
        st.savings_chars4 = sum(chars4_cost(d).savings for d in would_defer)
        savings = st.savings_chars4 if cfg.savings_measure == "chars4" else st.savings_tokens
        visible = len(catalog) + 1  # ToolSearch counts, as the model would see it
        if cfg.enabled is True:
            st.active, st.activation = True, "enabled = true"
        elif cfg.enabled is False:
            st.active, st.activation = False, "enabled = false"
        elif visible < cfg.min_tools:
            st.active, st.activation = False, f"{visible} tools < min_tools {cfg.min_tools}"
        elif savings <= cfg.beta_overhead:
            st.active, st.activation = (
                False,
                (f"savings {savings:.0f} ({cfg.savings_measure}) <= beta_overhead {cfg.beta_overhead}"),
            )
        else:
            st.active, st.activation = (
                True,
                (
                    f"{visible} tools >= {cfg.min_tools} and savings {savings:.0f} ({cfg.savings_measure}) "
                    f"> {cfg.beta_overhead}"
                ),
            )
        if not st.active:
            # below the thresholds only an owner's "always" defers
            for name, p in modes.items():
                if p.mode == "deferred" and p.reason != "policy always" and not p.reason.startswith("group"):
                    modes[name] = Placement("eager", f"inactive ({st.activation})")
        elif cfg.prior_eager and ctx.priors.loaded:
            for d in catalog:
                p = modes[d.name]
                if p.mode != "deferred" or p.reason == "policy always" or d.name in grouped:
                    continue
                prior = ctx.priors.p.get(d.name)
                c = cost(d, "tokens")
                be = breakeven(c.c, c.c_bar, cfg.retention.gamma)
                if prior is not None and prior > be:
                    modes[d.name] = Placement("eager", f"prior p={prior:.3f} > breakeven {be:.3f}")
                    if cfg.strategy == "inject":
                        st.retention[d.name] = BetaState.from_prior(prior, cfg.retention, st.step)
        st.modes = modes
        st.placed = True

    def _render(self, ctx: RunContext, st: DeferralState) -> str | None:
        if not st.deferred() and not ctx.groups:
            return None
        grouped = {d.name for g in ctx.groups.values() for d in g.known}
        deferred = [
            d
            for d in self._catalog(ctx)
            if st.modes.get(d.name, Placement("eager", "")).mode == "deferred" and d.name not in grouped
        ]
        styles = ("descriptions", "names", "groups", "count")
        text = ""
        for style in styles[styles.index(self.config.listing) :]:
            text = render_listing(
                deferred,
                style=style,
                strategy=self.strategy,
                search_tool=SEARCH_TOOL,
                groups=list(ctx.groups.values()),
            )
            # a listing over budget steps down to a smaller form rather than flood the prompt
            if not self.config.listing_budget or count_tokens(text) <= self.config.listing_budget:
                break
        return text

    # ------------------------------------------------------------------ phases
    @hookimpl
    def greenroom_run_start(self, ctx: RunContext) -> None:
        st = self._state(ctx)
        self._mode = self.config.strategy
        if self._mode == "native" and not ctx.hosted_tool_search:
            self._mode = "dispatch"
            if st.strategy != "dispatch":  # once per session, not every run
                ctx.emit(
                    ev.PluginWarning(
                        plugin=self.name,
                        hook="greenroom_run_start",
                        message=(
                            f"strategy = native needs a model with hosted tool search; {ctx.model_name} "
                            "has none, so deferred tools work as with strategy = dispatch"
                        ),
                    )
                )
        st.strategy = self._mode
        if not st.placed:
            self._place(ctx, st)
        self._sent_cache: tuple[int, list[ToolDescriptor]] | None = None

    @hookimpl
    def greenroom_before_inference(self, ctx: RunContext, request: RequestDraft) -> None:
        st = self._state(ctx)
        cfg = self.config
        st.step += 1
        if cfg.strategy == "inject":
            self._retain(ctx, st)
        if not st.active and not st.deferred():
            # below the thresholds nothing changes: the plugin's own tools are not sent either
            request.tools[:] = [d for d in request.tools if d.name not in OWN_TOOLS]
            return
        if self.strategy == "native":
            request.tools[:] = self._native_tools(ctx, st)
            request.deferred = {
                d.name for d in request.tools if st.modes.get(d.name, Placement("eager", "")).mode == "deferred"
            }
            request.remove_section(SECTION_KEY)  # the provider tells the model what it can search
            return
        if self.strategy == "dispatch" and self._sent_cache is not None and self._sent_cache[0] == id(st):
            request.tools[:] = self._sent_cache[1]
        else:
            own = self._own_tools(ctx)
            own_names = {d.name for d in own}
            sent = [
                d
                for d in request.tools
                if d.name not in own_names and st.modes.get(d.name, Placement("eager", "")).mode == "eager"
            ]
            if cfg.strategy == "inject":
                # a session resumed in a new runtime has not re-run its group loaders yet:
                # tools it promoted from a group keep their place from the catalog, and the
                # first call loads the group implicitly
                present = {d.name for d in sent} | own_names
                for name, p in st.modes.items():
                    promoted = p.reason.startswith("promotion")
                    if promoted and name not in present and name not in ctx.hidden:
                        d = self._descriptor(ctx, name)
                        if d is not None:
                            sent.append(d)
            request.tools[:] = sent + own
            if self.strategy == "dispatch":
                self._sent_cache = (id(st), list(request.tools))
        if self.strategy == "dispatch":
            if st.listing is None:
                st.listing = self._render(ctx, st) or ""
            listing = st.listing
        else:
            listing = self._render(ctx, st) or ""
        if listing:
            request.set_section(SystemSection(SECTION_KEY, listing, stable=True))
        else:
            request.remove_section(SECTION_KEY)

    def _native_tools(self, ctx: RunContext, st: DeferralState) -> list[ToolDescriptor]:
        """Every tool of the catalog (group tools not loaded yet included, hidden ones
        never), in the order they were first sent this session: the deferred set and the
        order are fixed, so the tools array is the same bytes on every step."""
        if self._sent_cache is not None and self._sent_cache[0] == id(st):
            return list(self._sent_cache[1])
        catalog = {d.name: d for d in self._catalog(ctx)}
        seen = set(st.native_order)
        st.native_order.extend(n for n in catalog if n not in seen)
        sent = [catalog[n] for n in st.native_order if n in catalog]
        self._sent_cache = (id(st), sent)
        return list(sent)

    def _retain(self, ctx: RunContext, st: DeferralState) -> None:
        """Re-defer promoted tools that have gone idle (inject strategy)."""
        cfg = self.config.retention
        for name, beta in list(st.retention.items()):
            placement = st.modes.get(name)
            if (
                placement is None
                or placement.mode != "eager"
                or placement.reason.startswith(("rule", "never", "policy"))
            ):
                continue
            d = self._descriptor(ctx, name)
            if d is None:
                continue
            c = cost(d, "tokens")
            if should_redefer(beta, st.step, c.c, c.c_bar, cfg):
                idle = beta.idle_steps(st.step)
                st.modes[name] = Placement("deferred", f"retention: idle {idle} steps, upper90 {beta.upper90:.4f}")
                del st.retention[name]
                ctx.emit(ToolDeferred(step=ctx.step, tool=name, reason=st.modes[name].reason))

    @hookimpl
    def greenroom_after_inference(self, ctx: RunContext, response: ModelResponse) -> None:
        st = self._state(ctx)
        for search in response.searches:
            # the provider searched on its side: report it like a ToolSearch call
            ctx.emit(
                SearchPerformed(
                    step=ctx.step,
                    query=search.query,
                    mode="hosted" if search.error is None else f"hosted error {search.error}",
                    results=tuple((n, 1.0) for n in search.tools),
                )
            )
            self._promote(ctx, st, list(search.tools), f"hosted search {search.query!r}")
        if self.strategy != "inject" or not st.retention:
            return
        called = {self._target_name(c) for c in response.tool_calls}
        for name, beta in st.retention.items():
            beta.observe(name in called, self.config.retention.omega, st.step)

    @staticmethod
    def _target_name(call: ToolCall) -> str:
        if call.name == DISPATCH_TOOL and call.arguments:
            return str(call.arguments.get("tool_name", call.name))
        return call.name

    # ------------------------------------------------------------------ calls
    @hookimpl
    async def greenroom_resolve_tool_call(self, ctx: RunContext, call: ToolCall) -> ToolCall | None:
        target = call
        if call.name == DISPATCH_TOOL and call.arguments is not None:
            name = call.arguments.get("tool_name")
            if not isinstance(name, str):
                return None  # schema validation of deferred_tool_call reports it
            args = call.arguments.get("arguments", {})
            if isinstance(args, str):  # models often send the inner arguments as a JSON string
                try:
                    parsed = json.loads(args)
                except json.JSONDecodeError:
                    parsed = None
                target = ToolCall(call.id, name, parsed if isinstance(parsed, dict) else None, args)
            elif isinstance(args, dict):
                target = ToolCall(call.id, name, args)
            else:
                target = ToolCall(call.id, name, None, json.dumps(args))
        if target.name not in ctx.tools and target.name not in ctx.hidden:
            group = ctx.group_of(target.name)
            if group is not None:
                try:
                    await ctx.load_group(group.id)
                    self._state(ctx).expansion[group.id] = None
                except Exception:
                    return target if target is not call else None
        return target if target is not call else None

    @hookimpl(trylast=True)
    async def greenroom_before_tool_execute(
        self, ctx: RunContext, call: ToolCall, tool: ToolDescriptor
    ) -> Decision | None:
        if call.name == SEARCH_TOOL:
            return Decision.answer(await self._search(ctx, call))
        if call.name == LOAD_TOOL:
            return Decision.answer(await self._load_tools(ctx, call))
        return None

    @hookimpl
    def greenroom_after_tool_execute(self, ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
        st = self._state(ctx)
        placement = st.modes.get(call.name)
        if placement is None or placement.mode != "deferred" or call.name in st.discovered:
            if self.strategy == "inject" and call.name in st.retention:
                st.retention[call.name].last_called = st.step
            return
        # called by name without a search: it works, and now counts as discovered
        self._promote(ctx, st, [call.name], "called without search")

    def _promote(self, ctx: RunContext, st: DeferralState, names: Sequence[str], reason: str) -> None:
        for name in names:
            if name not in st.discovered:
                st.discovered.append(name)
            placement = st.modes.get(name)
            if placement is None or placement.mode != "deferred":
                continue
            if self.strategy == "inject":
                st.modes[name] = Placement("eager", f"promotion: {reason}")
                st.retention[name] = BetaState.from_prior(self._prior(ctx, name), self.config.retention, st.step)
            ctx.emit(ToolPromoted(step=ctx.step, tool=name, reason=reason))

    # ------------------------------------------------------------------ ToolSearch
    async def _search(self, ctx: RunContext, call: ToolCall) -> ToolResult:
        st = self._state(ctx)
        args = call.arguments or {}
        limit = int(args.get("max_results") or self.config.max_results)
        query = SearchQuery.parse(str(args.get("query", "")), max_results=limit)
        catalog = self._catalog(ctx)
        deferred = [d for d in catalog if st.modes.get(d.name, Placement("eager", "")).mode == "deferred"]
        by_name = {d.name: d for d in catalog}
        missing: list[str] = []
        scored: list[tuple[str, float]] = []
        if query.mode == "select":
            found, missing = resolve_select(query.names, list(by_name))
            scored = [(n, 1.0) for n in found]
        elif query.mode == "browse":
            return self._browse(ctx, deferred, query)
        else:
            results, _ = await ctx.search(query, deferred)
            scored = [(s.name, s.score) for s in results]
        ctx.emit(
            SearchPerformed(
                step=ctx.step, query=query.text, mode=query.mode, results=tuple(scored), missing=tuple(missing)
            )
        )
        matched = [by_name[n] for n, _ in scored if n in by_name]
        if not matched:
            return ToolResult(self._no_match(query, deferred, missing))
        self._promote(ctx, st, [d.name for d in matched], f"search {query.text!r}")
        parts = [format_functions(matched)]
        if missing:
            parts.append(f"Not found: {', '.join(missing)}.")
        if self.strategy == "dispatch":
            parts.append(f"Call these with {DISPATCH_TOOL}(tool_name, arguments).")
        else:
            parts.append("These tools are callable directly from your next step.")
        return ToolResult("\n".join(parts))

    def _browse(self, ctx: RunContext, deferred: Sequence[ToolDescriptor], query: SearchQuery) -> ToolResult:
        names = sorted(deferred, key=lambda d: ((d.group or ""), d.name))
        shown = names[: self.config.browse_limit]
        ctx.emit(SearchPerformed(step=ctx.step, query="", mode="browse", results=tuple((d.name, 0.0) for d in shown)))
        lines = [f"{len(deferred)} deferred tools. Search with keywords to load schemas."]
        lines += [f"{d.name} - {first_line(d.description, 80)}" for d in shown]
        if len(names) > len(shown):
            lines.append(f"... and {len(names) - len(shown)} more.")
        return ToolResult("\n".join(lines))

    def _no_match(self, query: SearchQuery, deferred: Sequence[ToolDescriptor], missing: Sequence[str]) -> str:
        names = sorted(d.name for d in deferred)
        what = f"select {', '.join(missing)}" if query.mode == "select" else repr(query.text)
        head = f"No tools matched {what}."
        shown = names[: self.config.browse_limit]
        more = f" ... and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
        return f"{head} Available deferred tools: {', '.join(shown)}{more}. Refine the query."

    # ------------------------------------------------------------------ load_tools
    async def _load_tools(self, ctx: RunContext, call: ToolCall) -> ToolResult:
        st = self._state(ctx)
        args = call.arguments or {}
        group_id = str(args.get("group_id", ""))
        wanted = args.get("tool_names")
        out: dict[str, Any] = {"error": None, "expanded": False, "group_id": group_id, "remaining": 0, "tool_names": []}
        if self.strategy == "dispatch":
            out["schemas"] = []
        group = ctx.groups.get(group_id)
        if group is None:
            out["error"] = f"unknown group {group_id!r}; available: {', '.join(sorted(ctx.groups))}"
            return ToolResult(compact_json(out), is_error=True)
        try:
            tools = await ctx.load_group(group_id)
        except Exception as exc:
            out["error"] = f"loading {group_id} failed: {type(exc).__name__}: {exc}"
            return ToolResult(compact_json(out), is_error=True)
        available = {t.descriptor.name: t.descriptor for t in tools if t.descriptor.name not in ctx.hidden}
        if wanted:
            names = [n for n in wanted if n in available]
            unknown = [n for n in wanted if n not in available]
            if unknown:
                out["error"] = f"not in {group_id}: {', '.join(unknown)}"
        else:
            names = sorted(available)
        previous = st.expansion.get(group_id, [])
        if previous is None or not wanted:
            st.expansion[group_id] = None
        else:
            merged = sorted(set(previous) | set(names))
            st.expansion[group_id] = None if set(merged) >= set(available) else merged
        loaded = set(available) if st.expansion[group_id] is None else set(st.expansion[group_id] or [])
        out["expanded"] = st.expansion[group_id] is None
        out["remaining"] = len(set(available) - loaded)
        out["tool_names"] = sorted(names)
        if self.strategy == "dispatch":
            out["schemas"] = [available[n].to_json() for n in sorted(names)]
        for n in names:
            st.modes.setdefault(n, Placement("deferred", f"group {group_id}"))
        self._promote(ctx, st, sorted(names), f"load_tools {group_id}")
        return ToolResult(compact_json(out), is_error=out["error"] is not None and not names)

    @hookimpl
    def greenroom_run_end(self, ctx: RunContext, outcome: RunOutcome) -> None:
        self._sent_cache = None
