"""What the gateway offers of its upstream servers beside their tools: prompts, resources and
resource templates (``upstream``), their arguments completed (``completion/complete``), and
resource subscriptions (``subscriptions``), as MCP handlers.

A 2025-11-25 connection subscribes with ``resources/subscribe`` and is told with
``notifications/resources/updated``; its subscriptions end with it. A 2026-07-28 client
names the resources in its ``subscriptions/listen`` stream (``resourceSubscriptions``); they
are held while the stream is open, and their updates ride it. Lists come in pages, with the
cache hints of what the upstream servers may change (``wire``).
"""

from __future__ import annotations

import logging
from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream

from greenroom import Runtime
from greenroom_gateway.requests import connection_of, observing
from greenroom_gateway.subscriptions import LimitReached, Subscriptions
from greenroom_gateway.upstream import Upstream
from greenroom_gateway.wire import UPSTREAM_TTL_MS, CursorError, page

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.subscriptions import ListenHandler, SubscriptionBus

log = logging.getLogger("greenroom.serve")

INVALID_PARAMS = -32602
INVALID_REQUEST = -32600
MAX_PENDING_UPDATES = 1_000
"""Resource updates queued for the clients at once; past it one is dropped, with a warning."""
_HELD = "greenroom.subscriptions"  # a connection's state key: its subscriptions are dropped with it


class Offers:
    """The handlers of prompts, resources, completions and subscriptions."""

    def __init__(self, runtime: Runtime, upstream: Upstream, listen: ListenHandler, bus: SubscriptionBus) -> None:
        self.runtime = runtime
        self.upstream = upstream
        self.subscriptions = Subscriptions(upstream)
        self._listen = listen
        self._bus = bus

    def handlers(self) -> dict[str, Any]:
        """The lowlevel server's ``on_*`` keywords (none without upstream servers)."""
        if not self.upstream.servers:
            return {"on_subscriptions_listen": self._listen}
        return {
            "on_list_prompts": self.list_prompts,
            "on_get_prompt": self.get_prompt,
            "on_list_resources": self.list_resources,
            "on_list_resource_templates": self.list_templates,
            "on_read_resource": self.read_resource,
            "on_completion": self.complete,
            "on_subscribe_resource": self.subscribe,
            "on_unsubscribe_resource": self.unsubscribe,
            "on_subscriptions_listen": self.listen,
        }

    def follow_updates(self) -> MemoryObjectReceiveStream[tuple[str, str]]:
        """Each upstream server's ``notifications/resources/updated`` (told in the MCP
        host's thread, which never waits for a client) queued for ``pass_updates``, at most
        ``MAX_PENDING_UPDATES`` at once; set before the servers start, it also lets them
        elicit (``greenroom.kit.call_asker``)."""
        send, receive = anyio.create_memory_object_stream[tuple[str, str]](MAX_PENDING_UPDATES)
        token = anyio.lowlevel.current_token()

        def put(update: tuple[str, str]) -> None:
            try:
                send.send_nowait(update)
            except anyio.WouldBlock:
                log.warning("MCP server %r: an update of %r was dropped (%d pending)", *update, MAX_PENDING_UPDATES)

        def heard(server: Any, uri: str) -> None:
            try:
                anyio.from_thread.run_sync(put, (server.name, uri), token=token)
            except Exception:  # the gateway is stopping
                log.debug("a resource update was not handed on", exc_info=True)

        for server in self.upstream.servers.values():
            server.on_resource_updated = heard
        return receive

    async def pass_updates(self, updates: MemoryObjectReceiveStream[tuple[str, str]]) -> None:
        """The updates, in the order the servers sent them, to the clients that hold the resource."""
        async for server, uri in updates:
            await self.subscriptions.updated(server, uri)

    # -- prompts and resources ---------------------------------------------------------------
    async def list_prompts(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListPromptsResult:
        with observing(self.runtime, ctx, "prompts/list"):
            prompts, following = paged(await self.upstream.list_prompts(), params)
            return mcp_types.ListPromptsResult(
                prompts=list(prompts), next_cursor=following, ttl_ms=UPSTREAM_TTL_MS, cache_scope="public"
            )

    async def get_prompt(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.GetPromptRequestParams
    ) -> mcp_types.GetPromptResult:
        with observing(self.runtime, ctx, "prompts/get", params.name):
            try:
                return await self.upstream.get_prompt(params.name, params.arguments)
            except KeyError as exc:
                raise invalid(str(exc.args[0])) from None

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListResourcesResult:
        with observing(self.runtime, ctx, "resources/list"):
            resources, following = paged(await self.upstream.list_resources(), params)
            return mcp_types.ListResourcesResult(
                resources=list(resources), next_cursor=following, ttl_ms=UPSTREAM_TTL_MS, cache_scope="public"
            )

    async def list_templates(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> mcp_types.ListResourceTemplatesResult:
        with observing(self.runtime, ctx, "resources/templates/list"):
            templates, following = paged(await self.upstream.list_templates(), params)
            return mcp_types.ListResourceTemplatesResult(
                resource_templates=list(templates), next_cursor=following, ttl_ms=UPSTREAM_TTL_MS, cache_scope="public"
            )

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.ReadResourceRequestParams
    ) -> mcp_types.ReadResourceResult:
        with observing(self.runtime, ctx, "resources/read", str(params.uri)):
            try:
                return await self.upstream.read_resource(str(params.uri))
            except KeyError as exc:
                raise invalid(str(exc.args[0])) from None

    async def complete(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.CompleteRequestParams
    ) -> mcp_types.CompleteResult:
        ref = params.ref
        target = ref.name if isinstance(ref, mcp_types.PromptReference) else ref.uri
        with observing(self.runtime, ctx, "completion/complete", target):
            try:
                return await self.upstream.complete(params)
            except KeyError as exc:
                raise invalid(str(exc.args[0])) from None

    # -- subscriptions -----------------------------------------------------------------------
    async def subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.SubscribeRequestParams
    ) -> mcp_types.EmptyResult:
        uri = str(params.uri)
        with observing(self.runtime, ctx, "resources/subscribe", uri):
            conn = connection_of(ctx)
            if _HELD not in conn.state:  # the first of this connection's: all go when it closes
                conn.state[_HELD] = True
                conn.exit_stack.push_async_callback(self.subscriptions.drop, conn)
            try:
                await self._hold(conn, uri, ctx.session.send_resource_updated)
            except KeyError as exc:
                raise invalid(str(exc.args[0])) from None
            return mcp_types.EmptyResult()

    async def unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.UnsubscribeRequestParams
    ) -> mcp_types.EmptyResult:
        with observing(self.runtime, ctx, "resources/unsubscribe", str(params.uri)):
            await self.subscriptions.unsubscribe(connection_of(ctx), str(params.uri))
            return mcp_types.EmptyResult()

    async def listen(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.SubscriptionsListenRequestParams
    ) -> mcp_types.SubscriptionsListenResult:
        """``subscriptions/listen`` (the SDK's handler), with its resources held upstream
        while the stream is open; one the gateway cannot hold fails the request, saying why."""
        stream = object()
        try:
            for uri in dict.fromkeys(params.notifications.resource_subscriptions or ()):
                try:
                    await self._hold(stream, uri, self._publish_updated)
                except KeyError:  # as the SDK does: honored, and never fires
                    log.info("subscriptions/listen: no server offers %r", uri)
            return await self._listen(ctx, params)
        finally:
            await self.subscriptions.drop(stream)

    async def _hold(self, client: Hashable, uri: str, notify: Any) -> None:
        from mcp.shared.exceptions import MCPError

        try:
            await self.subscriptions.subscribe(client, uri, notify)
        except LimitReached as exc:
            raise MCPError(INVALID_REQUEST, str(exc)) from None

    async def _publish_updated(self, uri: str) -> None:
        from mcp.shared.subscriptions import ResourceUpdated

        await self._bus.publish(ResourceUpdated(uri=uri))


def paged(items: Any, params: mcp_types.PaginatedRequestParams | None) -> tuple[Any, str | None]:
    try:
        return page(items, params.cursor if params is not None else None)
    except CursorError as exc:
        raise invalid(str(exc)) from None


def invalid(message: str) -> Exception:
    from mcp.shared.exceptions import MCPError

    return MCPError(INVALID_PARAMS, message)


__all__ = ["Offers", "invalid", "paged"]
