"""Every greenroom hook, typed and documented, grouped by phase in call order.

Plugin authors implement these with ``from greenroom import hookimpl``. A hook that the
runtime calls during a run may be written as ``async def``: each implementation finishes
before the next is called, in pluggy's order, and wrappers (``wrapper=True`` or
``hookwrapper=True``) see and may change the answers. A hook is called once per phase
(once per tool call for the per-call hooks), never once per catalog tool.

Every implementation answers for itself. During a run, a plain (not ``async``)
implementation runs in a worker thread (unless its plugin sets ``nonblocking = True``)
and every implementation that waits is bounded by the agent's ``tool_timeout``; one that
raises (``SystemExit``, ``KeyboardInterrupt`` and ``GeneratorExit`` included), outlasts
the timeout or answers something of the wrong shape fails, named by plugin, distribution
and hook. Each hook's docstring says what such a failure does to the call and the run.

Turns: in a run of kind ``AGENT`` a model answers each request; in ``greenroom serve``
each client's run is of kind ``CLIENT`` and each tool call the client makes is a turn of
its own (a *client turn*, event ``client_call``): no model answered, so
``greenroom_after_inference`` is not called for it; the call goes through resolve, the
gates and AfterToolExecute as usual, and the next step's ``greenroom_before_inference``
shapes what the client is offered. ``ctx.kind`` says which.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pathlib import Path

    import typer

    from greenroom.config import ConfigError, RuntimeConfig
    from greenroom.events import Event
    from greenroom.mcp.observe import McpRequest
    from greenroom.models import ModelResponse, ProviderFactory, RequestDraft, ToolCall, ToolPlacement
    from greenroom.plugins.readiness import Readiness
    from greenroom.run.context import Decision, RunContext, RunOutcome
    from greenroom.run.limits import Truncation
    from greenroom.run.runtime import Runtime
    from greenroom.run.session import Session
    from greenroom.search import Ranking, ScoredTool, SearchQuery
    from greenroom.state import StateRegistry
    from greenroom.tools import Tool, ToolDescriptor, ToolResult
    from greenroom.tools.groups import ToolGroup
    from greenroom.tools.toolset import ToolSet

from greenroom.plugins.markers import PROJECT as PROJECT
from greenroom.plugins.markers import hookspec as hookspec

# --------------------------------------------------------------------------------------
# Contributions: called once when a runtime is built, or when the CLI starts. One that
# raises as a runtime is built stops it: the error names the plugin, its distribution and
# the hook.
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
    """Contribute tools of the plugin's own (a tool search or a group loader, say).

    Called once per runtime with the user's tool set and tool groups (read-only), after
    they are known. Return the tools to add; they are visible to the model like any other
    tool and go through the same placement, validation and gates, and they run with the
    run's context (``ToolCallContext.run``), through which they may call the run's other
    tools as the model would (``RunContext.call_tool``).
    """


@hookspec
def greenroom_model_providers() -> Mapping[str, ProviderFactory] | None:
    """Contribute model providers by prefix: ``{"openai": factory}``.

    ``agent.model = "openai:gpt-4o-mini"`` calls ``factory("gpt-4o-mini", options)``.
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
    session and profile state carry over. Keep what belongs to this run in ``ctx.state``,
    never on the plugin instance: one runtime serves many runs at once (``greenroom serve``'s clients).

    If it fails, the other plugins' RunStart still runs, then the run ends with stop
    reason ``error`` and a ``PluginHookError`` naming the plugin, its distribution and
    the hook; RunEnd still runs.
    """


@hookspec
def greenroom_hidden_tools(ctx: RunContext, tools: Sequence[ToolDescriptor]) -> Iterable[str] | None:
    """Name the tools this agent may not use in this run.

    Called once per run, right after ``greenroom_run_start``, with every tool the agent
    could reach: loaded tools, plugin tools, and the tools of groups and MCP servers
    that have not loaded yet (from their catalogs and cached listings). Tools
    ``[tools.policy]`` hides are in ``tools`` too. When a group's load brings tools its
    catalog did not name, the hook is called again with only those.

    A hidden tool is never sent, listed (nor counted in its group), found by search,
    loaded with its group, offered to a hosted search, suggested, or executed: the
    runtime refuses calls to it, and ``RunContext.tools``, ``groups`` and
    ``visible_descriptors()`` leave it out for every plugin. ``greenroom inspect``
    shows it as hidden by this plugin (docs/security.md).

    If it fails (a raise, a timeout, or an answer that is not a collection of names),
    the run ends with stop reason ``error`` and a named error; RunEnd still runs (fail
    closed: nothing runs without its scope).
    """


@hookspec
def greenroom_before_inference(ctx: RunContext, request: RequestDraft) -> None:
    """Shape the next model request in place: tools, system sections, messages.

    Called once per step, before the model call. ``request.tools`` starts as every
    visible tool; plugins remove (defer), add or reorder. Changes to the stable part
    (tools and stable system sections) invalidate the provider's prompt cache. In a
    client run (``greenroom serve``) the request is what the client is offered: its
    tools, and the system sections' text as the server's instructions.

    If it fails, the other plugins' BeforeInference still runs, then the run ends with
    stop reason ``error`` and a named error before anything is sent; RunEnd still runs.
    """


@hookspec
def greenroom_after_inference(ctx: RunContext, response: ModelResponse) -> None:
    """Observe the model's response: usage, text, the tool calls it asked for.

    Called once per model turn, after the model call and before any tool runs. Not
    called for a client turn (``ctx.kind is RunKind.CLIENT``): no model answered.

    If it fails, the other plugins' AfterInference still runs, then the run ends with
    stop reason ``error`` and a named error, before any of the step's tool calls runs;
    RunEnd still runs.
    """


@hookspec(firstresult=True)
def greenroom_resolve_tool_call(ctx: RunContext, call: ToolCall) -> ToolCall | None:
    """Rewrite a tool call before anything else sees it (first non-None result wins).

    Called once per tool call. A plugin whose tool dispatches to other tools (it takes a
    tool name and that tool's arguments) returns the real call (keeping the call id), so
    validation, gates, events and usage counts all see the real tool. Return None to
    leave it as is. After it, core loads the group of a called tool that is not loaded
    yet (bounded by the tool timeout; a failed load leaves the unknown-tool error).

    If it fails (a raise, a timeout, or an answer that is not a ``ToolCall``), that call
    fails closed: it is not run, the model gets an error result naming the plugin and the
    hook, ``PluginError`` and ``ToolCallRejected`` events are emitted, AfterToolExecute is
    not called for it, and the run goes on.
    """


@hookspec(firstresult=True)
def greenroom_before_tool_execute(ctx: RunContext, call: ToolCall, tool: ToolDescriptor) -> Decision | None:
    """Gate a validated call: allow it, block it with a reason, or answer it.

    Called once per tool call, after resolve and validation. Return
    ``Decision.block("why")`` or ``Decision.answer(result)`` to stop the call, or None to
    let the next plugin (and finally the tool) decide. ``Decision.allow()`` runs the tool
    at once: later gates are not asked (pluggy's firstresult). A call refused before
    this hook (unknown tool, invalid arguments) never reaches it: it is a
    ``ToolCallRejected`` event instead.

    If it fails (a raise, a timeout, or an answer that is not a ``Decision``), that call
    fails closed: it is not run, the model gets an error result naming the plugin and the
    hook, a ``PluginError`` event is emitted, AfterToolExecute still runs (with that
    error result), and the run goes on.
    """


@hookspec(firstresult=True)
def greenroom_result_cut(ctx: RunContext, call: ToolCall, text: str, cut: Truncation) -> str | None:
    """Say how the model reads the rest of a cut result (first non-None answer wins).

    Called once per result over ``[agent] max_result_tokens`` (``text``, compacted and
    masked), once cut (``cut``: what is shown), before AfterToolExecute. A plugin that keeps
    ``text`` returns the note's last sentence: how to read it by ``call.id``. Otherwise, for
    an answer much longer than ``cut.advice`` (it would not fit) and when it fails (a
    ``PluginError`` event names the plugin; the run goes on), the note ends with ``cut.advice``.
    """


@hookspec
def greenroom_after_tool_execute(ctx: RunContext, call: ToolCall, result: ToolResult) -> None:
    """Observe a finished call: the real tool name, arguments and its result.

    Called once for each call that ``greenroom_before_tool_execute`` was called for,
    after execution (or after a gate answered or blocked it): a span or timer opened in
    *before* always gets its end here, and a call refused before the gates (unknown tool,
    invalid arguments, a failed resolve) never reaches either. Tool usage for this step
    is already recorded.

    Every implementation is called even when one fails, so an audit or billing plugin
    sees every call. A failure fails that call closed: the model gets an error result
    naming the first plugin that failed and the hook instead of the tool's result (the
    tool did run), a ``PluginError`` event is emitted for each failure, and the run goes
    on.
    """


@hookspec
def greenroom_run_end(ctx: RunContext, outcome: RunOutcome) -> None:
    """The run finished (final answer, max_steps, cancellation or error).

    Called once per run, whatever ended it (``outcome.stop_reason``; ``outcome.failure``
    says what failed). Save what should outlive the run.

    Every implementation is called even when one fails or outlasts ``tool_timeout``:
    each failure is a ``PluginError`` event, and the run's outcome stands.
    """


@hookspec
def greenroom_session_saved(session: Session, path: Path) -> None:
    """A session was saved to ``path`` (``Session.save``; ``greenroom run --session`` as it
    ends). Called after the file was written, where ``save`` was: a plain ``def`` that
    returns at once. A failure is logged, and the session stays saved."""


# --------------------------------------------------------------------------------------
# Observing: every event of every run.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_event(ctx: RunContext | None, event: Event) -> None:
    """Observe an event as it happens: every event a run emits (``run_start``,
    ``request``, ``response``, ``client_call``, ``tool_result``, ``tool_rejected``, plugin
    events, ..., ``run_end``) and those of the runtime itself, from the first one it emits
    while it is built (a tool found unusable as it loads). ``ctx`` is the run the event
    belongs to, or None outside any run.

    An observer (tracing, audit, metrics) is one implementation of this hook. It must be
    a plain ``def`` and return quickly: it is called where the event happens, on the
    event loop; hand slow work (exporting, writing) to a queue or a background thread.

    Every implementation is called even when one fails: a failure is reported to the
    runtime's event listeners as a ``PluginError`` (not to this hook again), once per run
    for each way an observer fails, and the run goes on. An ``async def`` is refused
    when the plugin loads.
    """


# --------------------------------------------------------------------------------------
# MCP requests: around each request to an upstream server.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_mcp_request(ctx: RunContext, request: McpRequest) -> AbstractContextManager[object] | None:
    """Observe a request greenroom sends to an upstream MCP server (``tools/call``).
    (The requests MCP clients send ``greenroom serve`` have a hook of their own, declared
    by the plugin that serves them.)

    Called once per request, in the task of the run's tool call, right before it is
    sent. Return a context manager (or None): greenroom enters it, sends the request, sets
    ``request.is_error`` / ``request.error_type``, then exits it. What it adds to
    ``request.meta`` on entering is sent as the request's ``params._meta`` (a tracer's
    W3C ``traceparent``). It must be a plain ``def`` and return at once.

    A failure (a raise, an answer that is not a context manager, a manager that fails to
    enter or exit) is logged and that answer left out; the request goes on.
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

    If it raises during a search a tool made (``ctx.search`` in a plugin's tool, a tool
    search say), that tool call fails closed with an error result naming the plugin and
    the hook, and the run goes on; during a search a phase hook made, the run ends as
    for that phase hook.
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

    A failure is contained as for ``greenroom_rank_tools``.
    """


# --------------------------------------------------------------------------------------
# Checking: what plugins tell ``greenroom config check`` about a config file.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_check_config(config: RuntimeConfig, runtime: Runtime) -> Iterable[ConfigError] | None:
    """Report what is wrong with this plugin's own part of a config, found without a run.

    Called once by ``greenroom config check``, with or without ``--connect`` (then before
    RunStart), after the runtime was built from ``config`` as a run would build it: the
    plugin's section is already validated against its schema and is the plugin's
    ``self.config``. No run has started; a plugin may ask the contribution hooks it
    declared through ``runtime.host.call_sync`` (which stores, say, are installed), and
    should open nothing outside the process: that is what RunStart does under
    ``--connect``. ``greenroom run`` does not call it. A plain ``def`` runs where it is
    called; an ``async def`` is awaited, bounded by the agent's ``tool_timeout``.

    Return the problems as ``ConfigError(message, path="plugins.<name>.<key>")``, one each,
    or None when all is well. Each is an error of the check (exit 2) at its dotted
    ``path`` and in its ``file``: when the error gives no file, the file that set
    ``path`` (else the last file read); when it gives no path, ``plugins.<name>``.

    If it fails (a raise, or an answer that is not an iterable of ``ConfigError``), that
    is an error of the check naming the plugin, its distribution and the hook, at
    ``plugins.<name>``, and the other plugins' checks still run.
    """


# --------------------------------------------------------------------------------------
# Inspection: what plugins tell operators about a runtime.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_inspect_tools(ctx: RunContext) -> Mapping[str, ToolPlacement] | None:
    """How this plugin placed each tool, for operators: ``{tool name: ToolPlacement}``.

    Called by ``greenroom inspect`` after the first request was previewed (RunStart and
    BeforeInference have run), and by anything else that explains a runtime. Return None
    when the plugin places no tools; when several plugins name one tool, the first
    answer in hook order wins. If it raises, the inspection stops with the named error.
    """


# --------------------------------------------------------------------------------------
# Operating: what a long-lived process (``greenroom serve``) asks of its plugins.
# --------------------------------------------------------------------------------------


@hookspec
def greenroom_readiness(runtime: Runtime) -> Iterable[Readiness] | None:
    """Say whether what this plugin needs in order to serve is there now: a database it
    reads and writes, a service it calls. ``Readiness(name, ready, detail)``, one each,
    or None when it needs nothing outside the process.

    Called by ``Runtime.readiness()``, which ``greenroom serve``'s ``/readyz`` asks (a
    load balancer's or Kubernetes' readiness probe, every few seconds per replica), so it
    must be cheap: a ``SELECT 1`` on a connection it keeps, or the outcome of its own last
    attempt. A plain ``def`` runs where it is called and must return at once; an ``async def`` is awaited,
    bounded by the agent's ``tool_timeout``. A failure, or an answer past that bound,
    counts as not ready, naming the plugin (a probe fails closed), and the other plugins
    are still asked. Nothing a plugin says here is shown with secrets: name and detail
    are for operators.
    """


HOOK_NAMES: tuple[str, ...] = tuple(name for name in list(globals()) if name.startswith("greenroom_"))
