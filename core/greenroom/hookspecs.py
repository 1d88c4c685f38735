"""Every greenroom hook, typed and documented, grouped by phase in call order.

Plugin authors implement these with ``from greenroom import hookimpl``. Any hook may be
written as ``async def``; the runtime awaits what it returns. A hook is called once per
phase (once per tool call for the per-call hooks), never once per catalog tool.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    import typer

    from greenroom.context import Decision, RunContext, RunOutcome
    from greenroom.models import ModelResponse, ProviderFactory, RequestDraft, ToolCall
    from greenroom.search import Ranking, ScoredTool, SearchQuery
    from greenroom.state import StateRegistry
    from greenroom.stores import StoreFactory
    from greenroom.tools import Tool, ToolDescriptor, ToolResult
    from greenroom.tools.groups import ToolGroup
    from greenroom.tools.toolset import ToolSet

PROJECT = "greenroom"
hookspec = pluggy.HookspecMarker(PROJECT)


# --------------------------------------------------------------------------------------
# Contributions: called once when a runtime is built, or when the CLI starts.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_register_state(registry: StateRegistry) -> None:
    """Register the state types this plugin keeps.

    Called once per runtime, before any run. Call ``registry.register(Cls, Scope.X)``
    for each attrs class the plugin stores under ``ctx.state`` / ``ctx.session_state``
    / ``ctx.profile_state``.
    """


@hookspec
def greenroom_tools(tools: ToolSet, groups: Mapping[str, ToolGroup]) -> Iterable[Tool] | None:
    """Contribute tools of the plugin's own (for example ToolSearch, load_tools).

    Called once per runtime with the user's tool set and tool groups (read-only), after
    they are known. Return the tools to add; they are visible to the model like any other
    tool and go through the same placement, validation and gates.
    """


@hookspec
def greenroom_model_providers() -> Mapping[str, ProviderFactory] | None:
    """Contribute model providers by prefix: ``{"openai": factory}``.

    ``agent.model = "openai:gpt-4o-mini"`` calls ``factory("gpt-4o-mini", options)``.
    """


@hookspec
def greenroom_profile_stores() -> Mapping[str, StoreFactory] | None:
    """Contribute profile stores by URL scheme: ``{"redis": factory}``.

    ``factory(url)`` returns a ``greenroom.stores.ProfileStore``.
    """


@hookspec
def greenroom_cli_commands(app: typer.Typer) -> None:
    """Add subcommands to the ``greenroom`` command line (``app.add_typer`` or
    ``app.command``). Called once when the CLI starts; a plugin that fails here is
    reported and skipped, and the rest of the CLI keeps working."""


# --------------------------------------------------------------------------------------
# Phase hooks, in the order a run calls them.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_run_start(ctx: RunContext) -> None:
    """A run begins (one user input). Load state, seed models, reset run counters.

    Called once per run, before the first model call. ``ctx.state`` (run scope) is fresh;
    session and profile state carry over.
    """


@hookspec
def greenroom_hidden_tools(ctx: RunContext, tools: Sequence[ToolDescriptor]) -> Iterable[str] | None:
    """Name the tools this agent may not use in this run.

    Called once per run, right after ``greenroom_run_start``. Hidden tools are never
    sent, searched, revealed or executed (a call to one gets an error result). A plugin
    whose BeforeToolExecute gate blocks a tool outright should hide it here too.
    """


@hookspec
def greenroom_before_inference(ctx: RunContext, request: RequestDraft) -> None:
    """Shape the next model request in place: tools, system sections, messages.

    Called once per step, before the model call. ``request.tools`` starts as every
    visible tool; plugins remove (defer), add or reorder. Changes to the stable part
    (tools and stable system sections) invalidate the provider's prompt cache.
    """


@hookspec
def greenroom_after_inference(ctx: RunContext, response: ModelResponse) -> None:
    """Observe the model's response: usage, text, the tool calls it asked for.

    Called once per step, after the model call and before any tool runs.
    """


@hookspec(firstresult=True)
def greenroom_resolve_tool_call(ctx: RunContext, call: ToolCall) -> ToolCall | None:
    """Rewrite a tool call before anything else sees it (first non-None result wins).

    Called once per tool call. A dispatcher such as ``deferred_tool_call(tool_name,
    arguments)`` returns the real call (keeping the call id), so validation, gates,
    events and usage counts all see the real tool. Return None to leave it as is.
    """


@hookspec(firstresult=True)
def greenroom_before_tool_execute(ctx: RunContext, call: ToolCall, tool: ToolDescriptor) -> Decision | None:
    """Gate a validated call: allow it, block it with a reason, or answer it.

    Called once per tool call, after resolve and validation. Return
    ``Decision.block("why")`` or ``Decision.answer(result)`` to stop the call, or None to
    let the next plugin (and finally the tool) decide.
    """


@hookspec
def greenroom_after_tool_execute(ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
    """Observe a finished call: the real tool name, arguments and its result.

    Called once per tool call, after execution (or after a gate answered or blocked it,
    or an error result was made). Tool usage for this step is already recorded.
    """


@hookspec
def greenroom_run_end(ctx: RunContext, outcome: RunOutcome) -> None:
    """The run finished (final answer, max_steps, cancellation or error).

    Called once per run, even when the run failed. Save what should outlive the run.
    """


# --------------------------------------------------------------------------------------
# Search: rankers score, one fuser combines.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_rank_tools(
    ctx: RunContext | None, query: SearchQuery, candidates: Sequence[ToolDescriptor]
) -> Ranking | None:
    """Score the candidates for a query; every ranker answers.

    Called once per search with the tools the agent may use. Return a ``Ranking``
    (ranker name and scored candidates, best first) or None to abstain.
    """


@hookspec(firstresult=True)
def greenroom_search_tools(
    ctx: RunContext | None,
    query: SearchQuery,
    candidates: Sequence[ToolDescriptor],
    rankings: Sequence[Ranking],
) -> list[ScoredTool] | None:
    """Fuse the rankers' answers into the final, ordered result list.

    Called once per search after ``greenroom_rank_tools``. The first non-None answer
    wins; wrap it (``hookwrapper=True`` or ``wrapper=True``) to re-rank or override.
    """


HOOK_NAMES: tuple[str, ...] = tuple(name for name in list(globals()) if name.startswith("greenroom_"))
