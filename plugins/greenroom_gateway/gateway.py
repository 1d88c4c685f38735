"""The gateway's MCP server: what each request of a client becomes in greenroom.

A 2025-11-25 client connection gets its own run (``clients.ClientRun``), started on its
first request after ``initialize`` and ended when the connection closes. A 2026-07-28
request has no session: it uses the run the gateway keeps for its caller (``sessions``).
With OAuth, the caller is the token's principal (``oauth.views.caller_of``), its run is
made with the view its scopes allow, and a connection stays its first caller's. All runs
share the one runtime (its upstream connections, its plugins, what they learn).
``tools/list`` is the tools the client's current step would send a model; for a
2026-07-28 caller, whose list must not change from request to request, the first step's.
A call goes through greenroom's call path and its result keeps the upstream content as it
was sent. When a call changes a 2025-11-25 client's tools (a strategy that adds the tools
a search found), it is told with ``notifications/tools/list_changed``; 2026-07-28 callers
hear of changed lists through ``subscriptions/listen``. Lists come in pages with honest
cache hints (``wire``). Each request is observed by the plugins'
``greenroom_serve_request`` (a tracer's server span) in the task that handles it, and
logged (``requests``). A client has at most so many calls in progress (``ops.limits``);
one more is an error result at once. Upstream servers nothing is known of are listed once
the gateway answers (``upstream``). What an upstream server asks during a call
(``elicitation/create``) goes to the client that made it (``requests.asking``); prompts,
resources, completions and subscriptions are ``offers``'; with ``--experimental
progressive-disclosure``, ``disclosure`` answers ``tools/catalog``, ``tools/describe`` and
``tools/manifest``.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream

from greenroom import Runtime, ToolResult
from greenroom_gateway.clients import NOBODY, Caller, ClientRun, ClientView
from greenroom_gateway.disclosure import CAPABILITY, Disclosure
from greenroom_gateway.disclosure import FLAG as DISCLOSURE
from greenroom_gateway.oauth.views import ScopeRules, caller_of, refused
from greenroom_gateway.offers import Offers, paged
from greenroom_gateway.ops.limits import MAX_CALLS_PER_CLIENT, Calls, client_key
from greenroom_gateway.requests import (
    asking,
    client_name_of,
    connection_of,
    note_caller,
    observing,
    progress_to,
    sessionless,
)
from greenroom_gateway.sessions import MAX_CALLERS, Limits, LogicalRuns
from greenroom_gateway.skills import GatewaySkills
from greenroom_gateway.upstream import FirstListing, Upstream, upstream_changes
from greenroom_gateway.wire import NOT_CACHEABLE, SHARED_TTL_MS, Freshness, to_call_result, to_mcp_tool

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import NotificationOptions, Server
    from mcp.server.models import InitializationOptions

log = logging.getLogger("greenroom.serve")

_STATE_KEY = "greenroom.client"


class Gateway:
    """One runtime served to any number of MCP clients. With ``scopes`` (OAuth), every
    request's caller is the token's principal, and what its run offers is what the
    caller's scopes allow; with ``per_principal``, the priors it learns are its own."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        per_client: bool = False,
        name: str = "greenroom",
        max_calls_per_client: int = MAX_CALLS_PER_CLIENT,
        session_limits: Limits | None = None,
        scopes: ScopeRules | None = None,
        per_principal: bool = False,
        experimental: frozenset[str] = frozenset(),
    ) -> None:
        from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler

        self.runtime = runtime
        self.per_client = per_client
        self.scopes = scopes
        self.per_principal = per_principal
        self.experimental = experimental
        """Experimental features turned on (``--experimental``): ``progressive-disclosure``."""
        self.calls = Calls(max_calls_per_client)
        self.upstream = Upstream(runtime)
        self.first_listing = FirstListing(runtime)
        self.clients: set[ClientRun] = set()
        self.logical = LogicalRuns(self._end, session_limits)
        self.first_views: dict[ClientRun, ClientView] = {}
        self.last_listed: dict[str, tuple[str, ...]] = {}  # caller key -> tools/list it was given last
        self.instructions = ""
        self.bus = InMemorySubscriptionBus()
        self.listen = ListenHandler(self.bus)
        self.offers = Offers(runtime, self.upstream, self.listen, self.bus)
        self.caller_dependent = per_client or scopes is not None
        """Whether what a caller is offered depends on who it is (priors per client, views
        by scope): then its cached lists are ``private``."""
        self.server = self._build(name)
        self.skills = GatewaySkills(self)  # skills/list, skills/get, their files (``skills``)
        self.skills.install(self.server)

    def new_run(self, client_name: str | None = None, caller: Caller | None = None) -> ClientRun:
        """A client's run, for ``caller`` and with the view its scopes allow."""
        view = self.scopes.filter_for(caller or NOBODY) if self.scopes is not None else None
        return ClientRun(
            self.runtime, client_name=client_name, caller=caller, view=view, per_principal=self.per_principal
        )

    async def prepare(self) -> None:
        """Work out what a new client is told before it asks anything: the instructions
        (with OAuth, what a caller without any scope is offered)."""
        hidden = self.scopes.filter_for(NOBODY) if self.scopes is not None else None
        probe = ClientRun(self.runtime, view=hidden)  # the agent's own priors: nobody in particular asks
        view = await probe.start()
        await probe.end()  # it made no call: nothing is learned from it
        self.instructions = view.instructions
        self.server.instructions = view.instructions or None

    @contextlib.asynccontextmanager
    async def serving(self) -> AsyncIterator[None]:
        """Prepared, listing the upstream servers nothing is known of and following what
        they change while the body serves (``upstream``), then closed (``aclose``)
        however the body ends."""
        try:
            updates = self.offers.follow_updates()  # before a server starts: then each may elicit too
            await self.prepare()
            async with anyio.create_task_group() as tg:
                tg.start_soon(self.offers.pass_updates, updates)
                tg.start_soon(self._list_upstream)
                changes = upstream_changes(self.runtime)
                if changes is not None:
                    tg.start_soon(self._follow_upstream, changes)
                self.logical.later = tg.start_soon  # a run retired while held ends in the background
                try:
                    yield
                finally:
                    self.logical.later = None
                    tg.cancel_scope.cancel()
        finally:
            await self.aclose()

    async def _list_upstream(self) -> None:
        """The servers the runtime was built without, listed while the gateway answers;
        their tools then offered as a change of upstream tools is, and the instructions
        worked out again for the clients still to come."""
        try:
            if await self.first_listing.run():
                await self.upstream_changed()
                await self.prepare()
        except Exception:  # the servers start again when a call needs them
            log.warning("listing the upstream MCP servers failed", exc_info=True)
        finally:
            self.first_listing.finish()

    async def _follow_upstream(self, changes: MemoryObjectReceiveStream[None]) -> None:
        async for _ in changes:
            try:
                await self.upstream_changed()
            except Exception:  # the next change, or the next request, tries again
                log.warning("following a change of upstream tools failed", exc_info=True)

    async def upstream_changed(self) -> None:
        """Upstream servers listed new tools: the runtime takes them, each client's view
        is made again, and the clients whose view changed are told (a 2025-11-25
        connection by notification, 2026-07-28 callers through ``subscriptions/listen``)."""
        self.runtime.follow_listings()
        for run in list(self.first_views):
            if await run.refresh():
                self.first_views[run] = run.view
        for run in list(self.clients):
            if await run.refresh() and run.notify is not None:
                try:
                    await run.notify()
                except Exception:  # a client that cannot take it asks tools/list itself
                    log.debug("could not send tools/list_changed", exc_info=True)
        await self._publish_tools_changed()

    async def aclose(self) -> None:
        """End every client's run still open (so what was learned is kept), then the runtime."""
        with anyio.CancelScope(shield=True):
            self.listen.close()
            await self.logical.end_all()
            for run in list(self.clients):
                await self._end(run)
            await self.runtime.aclose()

    # -- clients -------------------------------------------------------------------------
    async def client(self, ctx: ServerRequestContext[Any, Any]) -> ClientRun:
        """The run of the client that sent this request; started on its first request,
        once the servers the gateway started with are listed."""
        caller = caller_of() if self.scopes is not None else None  # refused when there is none
        await self.first_listing.wait(ctx.method)
        conn = connection_of(ctx)
        run: ClientRun | None = conn.state.get(_STATE_KEY)
        if run is None:
            name = client_name_of(ctx) if self.per_client else None
            if sessionless(ctx):
                key = caller.key if caller is not None else (f"client:{name}" if name else "*")
                held = await self.logical.lease(key, lambda: self.new_run(name, caller))
                conn.exit_stack.push_async_callback(self.logical.release, held)  # this request holds it
                run = conn.state[_STATE_KEY] = held.run
                note_caller(self.limit_key(ctx, run))
                await run.ready()
                await self._first_view(key, run)
                return run
            run = conn.state[_STATE_KEY] = self.new_run(name, caller)
            run.notify = ctx.session.send_tool_list_changed
            self.clients.add(run)
            conn.exit_stack.push_async_callback(self._end, run)
        elif run.caller != caller:  # a connection is one caller's, with the scopes its view was made for
            raise refused("this connection was opened with another token's principal or scopes: connect again")
        note_caller(self.limit_key(ctx, run))
        await run.ready()
        return run

    def limit_key(self, ctx: ServerRequestContext[Any, Any], run: ClientRun) -> str:
        """Who a request counts against for the limits (``ops.limits.client_key``)."""
        return client_key(run, sessionless(ctx), client_name_of(ctx))

    async def _first_view(self, key: str, run: ClientRun) -> None:
        """Keep a kept run's first view (what its caller lists); when a new run's differs
        from what the caller was offered before, tell listeners the tools changed."""
        if run in self.first_views:
            return
        self.first_views[run] = run.view
        names = run.view.tool_names()
        before = self.last_listed.pop(key, None)
        self.last_listed[key] = names  # the most recent last; bounded like the kept runs
        while len(self.last_listed) > MAX_CALLERS:
            del self.last_listed[next(iter(self.last_listed))]
        if before is not None and before != names:
            await self._publish_tools_changed()

    async def _publish_tools_changed(self) -> None:
        from mcp.shared.subscriptions import ToolsListChanged

        try:
            await self.bus.publish(ToolsListChanged())
        except Exception:  # listeners refetch on their own when a stream drops
            log.debug("could not publish tools/list_changed", exc_info=True)

    async def _end(self, run: ClientRun) -> None:
        self.clients.discard(run)
        self.first_views.pop(run, None)
        try:
            await run.end()
        except Exception:  # one client's end never stops the others' or the gateway's
            log.warning("ending a client's run failed", exc_info=True)

    # -- handlers ------------------------------------------------------------------------
    async def list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListToolsResult:
        with observing(self.runtime, ctx, "tools/list"):
            _, view, fresh = await self.listing(ctx)
            tools, following = paged(view.tools, params)
            listed = [to_mcp_tool(d) for d in tools]
            return mcp_types.ListToolsResult(
                tools=listed, next_cursor=following, ttl_ms=fresh.ttl_ms, cache_scope=fresh.scope
            )

    async def listing(self, ctx: ServerRequestContext[Any, Any]) -> tuple[ClientRun, ClientView, Freshness]:
        """The caller's run, the view its ``tools/list`` gives (for a 2026-07-28 caller, whose
        list must not change from request to request, its first), and what it may cache."""
        run = await self.client(ctx)
        no_session = sessionless(ctx)
        view = self.first_views.get(run, run.view) if no_session else run.view
        return run, view, self._freshness(no_session)

    def _freshness(self, sessionless: bool) -> Freshness:
        """What a caller may cache of ``tools/list`` (see ``wire``)."""
        if not sessionless:
            return NOT_CACHEABLE  # a connection's list changes with its calls; it is told when
        return Freshness(SHARED_TTL_MS, "private" if self.caller_dependent else "public")

    async def call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CallToolRequestParams
    ) -> mcp_types.CallToolResult:
        with observing(self.runtime, ctx, "tools/call", params.name) as request:
            run = await self.client(ctx)
            result, changed = await self._call(ctx, run, params)
            request.is_error = result.is_error
            if result.is_error:
                request.error_type = "limit" if changed is None else "tool_error"
        if changed:
            try:
                await ctx.session.send_tool_list_changed()
            except Exception:  # a client that cannot take it asks tools/list itself
                log.debug("could not send tools/list_changed", exc_info=True)
        return to_call_result(result)

    async def _call(
        self, ctx: ServerRequestContext[Any, Any], run: ClientRun, params: mcp_types.CallToolRequestParams
    ) -> tuple[ToolResult, bool | None]:
        """The call within the client's limit (else refused at once: changed is None), and
        cancelled with an error if the gateway stops before it ends."""
        with self.calls.admitted(self.limit_key(ctx, run)) as admitted:
            if admitted is None:
                return ToolResult.error(self.calls.refusal()), None
            with admitted.scope, asking(ctx):  # the upstream server's progress and questions reach this client
                return await run.call(params.name, params.arguments, progress_to(ctx))
        return ToolResult.error(admitted.reason), False  # cancelled: the gateway is stopping

    def _build(self, name: str) -> Server[Any]:
        from mcp.server.lowlevel import NotificationOptions, Server

        disclosing = DISCLOSURE in self.experimental

        class GatewayServer(Server[Any]):
            """Says that the tools may change (they do, with a strategy that adds found tools),
            and, when they are on, the experimental methods it answers."""

            def get_capabilities(self, *args: Any, **kwargs: Any) -> mcp_types.ServerCapabilities:
                capabilities = super().get_capabilities(*args, **kwargs)
                if disclosing:
                    capabilities.experimental = {**(capabilities.experimental or {}), "tools": dict(CAPABILITY)}
                return capabilities

            def create_initialization_options(
                self,
                notification_options: NotificationOptions | None = None,
                experimental_capabilities: dict[str, dict[str, Any]] | None = None,
                extensions: dict[str, dict[str, Any]] | None = None,
            ) -> InitializationOptions:
                options = notification_options or NotificationOptions(tools_changed=True)
                return super().create_initialization_options(options, experimental_capabilities, extensions)

        from greenroom import __version__

        offers = self.offers.handlers()  # prompts, resources, completions, subscriptions
        server = GatewayServer(
            name, version=__version__, on_list_tools=self.list_tools, on_call_tool=self.call_tool, **offers
        )
        if disclosing:
            for method, (params, handler) in Disclosure(self.runtime, self.listing).handlers().items():
                server.add_request_handler(method, params, handler)
        return server


__all__ = ["Gateway"]
