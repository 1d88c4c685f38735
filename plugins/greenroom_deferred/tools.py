"""The plugin's own tools: ToolSearch, load_tools and the dispatcher deferred_tool_call.

They are real tools: the runtime runs them after validation and the gates, like any
other, and gives them the run (``ToolCallContext.run``) because they read and change
the session's deferral state, and follow the strategy of the run they are called in
(``run_state``): one instance of each serves every run of the runtime at once. The
dispatcher is unwrapped by the resolve hook before anything sees it (``unwrap``); its
``execute`` only runs when that did not happen.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from greenroom import RunContext, SearchQuery, ToolCall, ToolCallContext, ToolDescriptor, ToolResult
from greenroom.kit import compact_json, json_text, parse_json_object, resolve_select
from greenroom_deferred import answers
from greenroom_deferred.catalog import deferred_tools, domains, group_members, group_sizes, searched_tools
from greenroom_deferred.config import DeferredConfig
from greenroom_deferred.descriptors import (
    CLIENT_SEARCH_CALL,
    DISPATCH_DESCRIPTOR,
    DISPATCH_TOOL,
    LOAD_DESCRIPTOR,
    SEARCH_TOOL,
    search_descriptor,
)
from greenroom_deferred.events import SearchPerformed
from greenroom_deferred.run_state import run_strategy
from greenroom_deferred.state import DeferralState, Placement, PlacementSource
from greenroom_deferred.strategies import Strategy, script_tool

SEARCH_SHARE = 4
"""A search returns schemas of at most 1/SEARCH_SHARE of the listing budget (the names of
the rest, for ``select:``): what greenroom adds to a session stays within one budget."""


class RunTool:
    """A tool of this plugin; ``answer`` gets the run the call belongs to."""

    timeout: float | None = None

    def __init__(self, descriptor: ToolDescriptor, config: DeferredConfig) -> None:
        self._descriptor = descriptor
        self.config = config

    def strategy(self, run: RunContext) -> Strategy:
        """The strategy of the run this call belongs to (chosen at its RunStart)."""
        return run_strategy(run, self.config)

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        if ctx.run is None:
            return ToolResult.error(f"{self._descriptor.name} works only in a run of the runtime that contributed it")
        return await self.answer(ctx.run, ctx.run.session_state[DeferralState], args)

    async def answer(self, run: RunContext, st: DeferralState, args: dict[str, Any]) -> ToolResult:
        raise NotImplementedError


class ToolSearch(RunTool):
    """Finds deferred tools (keywords through the ranking hooks, ``select:``, browse).

    Its result is text for the model: the tools found as a ``<functions>`` block, one
    ``<function>{json}</function>`` line per tool (description, name, parameters), then
    the ``select:`` names not found and how to call what was found; or why nothing was
    found. ``structured`` carries the same: ``{"tools": [the definitions found, in order,
    as in the text], "message": the rest of the text}`` (``answers.structured``). In a run
    whose model writes scripts (``Scripting``: code mode), the text gives each tool as its
    script calls it, one signature a line (``signatures``), unless the provider's search
    reads the answer (native strategy).

    The contract with a provider whose model searches on the client side (``native``
    strategy; OpenAI's ``tool_search`` with ``execution: "client"``, Anthropic's
    ``tool_reference`` results): the provider offers its API's search tool for the
    tools in ``ModelRequest.deferred``, maps the model's search to a call named
    ``tool_search`` (``CLIENT_SEARCH_CALL``) with ``{"query", "max_results"}``, which the
    resolve hook turns into a call of this tool (same id), so greenroom's ranking and
    priors answer it and it runs through validation, gates and events like any call.
    The provider reads the names found from the result's ``<function>`` lines (the
    runtime hands providers the result's text) and renders them as its API loads tools
    (``tool_search_output``, ``tool_reference`` blocks), only those it sent deferred.
    """

    def __init__(self, config: DeferredConfig) -> None:
        super().__init__(search_descriptor(config.max_results), config)

    async def answer(self, run: RunContext, st: DeferralState, args: dict[str, Any]) -> ToolResult:
        limit = int(args.get("max_results") or self.config.max_results)
        query = SearchQuery.parse(str(args.get("query", "")), max_results=limit)
        if query.mode == "group":
            return self._group(run, st, query)
        catalog = run.catalog()
        deferred = deferred_tools(run, st)
        if not deferred and query.mode != "select":
            # every tool is already in the model's list: nothing to rank (``select:`` still
            # answers with schemas by name, deferred or not)
            run.emit(SearchPerformed(step=run.step, query=query.text, mode=query.mode, results=()))
            return _said(answers.NOTHING_DEFERRED)
        if query.mode == "browse":
            shown, text = answers.browse(deferred, self.config.browse_limit)
            results = tuple((d.name, 0.0) for d in shown)
            run.emit(SearchPerformed(step=run.step, query="", mode="browse", results=results))
            return _said(text)
        by_name = catalog.by_name
        missing: list[str] = []
        confident = True
        if query.mode == "select":
            names, missing = resolve_select(query.names, by_name)
            scored = [(n, 1.0) for n in names]
        else:
            # every tool the agent has is ranked, eager ones too: learning that made a tool
            # eager must not hide it from a search (it is named, its schema is not repeated);
            # a tool the query names exactly comes first
            ranked, _ = await run.search(query, searched_tools(run))
            exact = answers.named_in(query, by_name)
            scored = [(n, 1.0) for n in exact] + [(s.name, s.score) for s in ranked if s.name not in exact]
            scored = scored[: query.max_results]
            confident = bool(exact) or (bool(scored) and answers.confident(query, by_name[scored[0][0]]))
        run.emit(
            SearchPerformed(
                step=run.step, query=query.text, mode=query.mode, results=tuple(scored), missing=tuple(missing)
            )
        )
        run.usage.record_search(run.step, query.text, tuple(n for n, _ in scored))
        hits = [by_name[n] for n, _ in scored if n in by_name]
        if not hits:
            return _said(answers.no_match(query, deferred, missing, self.config.browse_limit))
        # what the model can call already (eager, or sent by the strategy): named, and its
        # schema sent only when it was asked for by name
        present = set() if query.mode == "select" else {d.name for d in hits if not st.is_deferred(d.name)}
        matched = [d for d in hits if d.name not in present]
        # a keyword search's schemas stay within their share of the budget; names asked for
        # by ``select:`` are what the model wants, and come whole
        matched, more = answers.within(matched, 0 if query.mode == "select" else self._result_budget())
        strategy = self.strategy(run)
        strategy.promote(run, st, [d.name for d in matched], f"search {query.text!r}")
        notes = []
        if not confident:
            notes.append(answers.unsure(query, hits, group_sizes(run)))
        if present:
            notes.append(answers.available(d.name for d in hits if d.name in present))
        if more:
            notes.append(answers.more(more))
        # a model that writes scripts reads each tool as its script calls it; a provider's
        # hosted search reads the schemas' lines, so those stay for it
        scripts = None if strategy.needs_hosted_search else script_tool(run)
        text, rest = answers.found(matched, missing, strategy.call_hint, notes, scripts)
        return ToolResult(text, structured=answers.structured(rest, matched))

    def _result_budget(self) -> int:
        """Schema tokens one search may return: its share of the listing budget (0: no limit)."""
        return self.config.listing_budget // SEARCH_SHARE

    def _group(self, run: RunContext, st: DeferralState, query: SearchQuery) -> ToolResult:
        """``group:NAME``: the names (and first lines) of one group's tools, no schemas."""
        wanted = query.names[0] if query.names else ""
        members, label = group_members(run, wanted)
        run.emit(SearchPerformed(step=run.step, query=query.text, mode="group", results=()))
        if members is None:
            return _said(answers.unknown_group(wanted, [g.id for g in run.groups.values()], domains(run)))
        return _said(answers.group_names(label, members, self.config.browse_limit * 4))


def _said(text: str) -> ToolResult:
    """An answer that found no schema: its text, and the same as structured content."""
    return ToolResult(text, structured=answers.structured(text))


class LoadTools(RunTool):
    """Loads a tool group (all of it, or the names given) and reports what it holds."""

    def __init__(self, config: DeferredConfig) -> None:
        super().__init__(LOAD_DESCRIPTOR, config)

    async def answer(self, run: RunContext, st: DeferralState, args: dict[str, Any]) -> ToolResult:
        strategy = self.strategy(run)
        group_id = str(args.get("group_id", ""))
        wanted = args.get("tool_names")
        out: dict[str, Any] = {"error": None, "expanded": False, "group_id": group_id, "remaining": 0, "tool_names": []}
        if strategy.schemas_in_results:
            out["schemas"] = []
        if group_id not in run.groups:
            out["error"] = f"unknown group {group_id!r}; available: {', '.join(sorted(run.groups))}"
            return _loaded(out, is_error=True)
        try:
            tools = await run.load_group(group_id)
        except Exception as exc:  # a loader that failed can be retried: tell the model why
            out["error"] = f"loading {group_id} failed: {type(exc).__name__}: {exc}"
            return _loaded(out, is_error=True)
        available = {t.descriptor.name: t.descriptor for t in tools if t.descriptor.name not in run.hidden}
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
        expansion = st.expansion[group_id]
        loaded = set(available) if expansion is None else set(expansion)
        out["expanded"] = expansion is None
        out["remaining"] = len(set(available) - loaded)
        out["tool_names"] = sorted(names)
        if strategy.schemas_in_results:
            out["schemas"] = [available[n].to_json() for n in sorted(names)]
        for n in names:
            if n not in st.modes:
                st.place(n, Placement("deferred", PlacementSource.GROUP, f"group {group_id}"))
        strategy.promote(run, st, sorted(names), f"load_tools {group_id}")
        return _loaded(out, is_error=out["error"] is not None and not names)


def _loaded(out: dict[str, Any], *, is_error: bool) -> ToolResult:
    """What ``load_tools`` answers: its report as JSON text, and as structured content."""
    return ToolResult(compact_json(out), is_error=is_error, structured=out)


class Dispatcher(RunTool):
    """``deferred_tool_call``: the resolve hook turns its calls into the real call."""

    def __init__(self, config: DeferredConfig) -> None:
        super().__init__(DISPATCH_DESCRIPTOR, config)

    async def answer(self, run: RunContext, st: DeferralState, args: dict[str, Any]) -> ToolResult:
        return ToolResult.error(
            f"{DISPATCH_TOOL} did not reach a tool: give tool_name (a tool you found) and its arguments"
        )


def unwrap(call: ToolCall) -> ToolCall | None:
    """The real call inside a ``deferred_tool_call`` (same id), or None when ``call`` is
    not one or names no tool (the dispatcher's own schema check then reports it)."""
    if call.name != DISPATCH_TOOL or call.arguments is None:
        return None
    name = call.arguments.get("tool_name")
    if not isinstance(name, str):
        return None
    args = call.arguments.get("arguments", {})
    if isinstance(args, str):
        # models often send the inner arguments as a JSON string; one nested too deeply
        # stays text (parsing it would recurse out), and the runtime says so to the model
        return ToolCall(call.id, name, parse_json_object(args), args)
    if isinstance(args, dict):
        return ToolCall(call.id, name, args)
    return ToolCall(call.id, name, None, json_text(args))


def client_search(call: ToolCall, strategy: Strategy, names: Mapping[str, object]) -> ToolCall | None:
    """The ``ToolSearch`` call a provider's client-side search stands for (same id and
    arguments), when the run's strategy leaves searching to the provider and the agent
    has no tool of that name itself; else None."""
    if call.name != CLIENT_SEARCH_CALL or not strategy.needs_hosted_search or CLIENT_SEARCH_CALL in names:
        return None
    return ToolCall(call.id, SEARCH_TOOL, call.arguments, call.raw_arguments)


def target_name(call: ToolCall) -> str:
    """The tool a call is for, looking through the dispatcher."""
    inner = unwrap(call)
    return call.name if inner is None else inner.name
