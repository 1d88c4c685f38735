"""Resource subscriptions of the gateway's clients, held upstream and their updates passed on.

A client subscribes to a resource by the URI the gateway offers (``resources/subscribe`` on
a 2025-11-25 connection, ``resourceSubscriptions`` of a 2026-07-28 ``subscriptions/listen``
stream). The gateway holds one subscription at the server that owns the resource, however
many clients hold one, and drops it when the last of them lets go (unsubscribes, closes its
connection, ends its stream). The server's ``notifications/resources/updated`` reaches
every client that holds that resource, under the URI it subscribed with, and no other
client. A client holds at most ``MAX_PER_CLIENT`` at once: one more is refused, naming the
limit. What a server restarted since forgot is held again on the next subscription to it.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Hashable

import anyio
import attrs

from greenroom_gateway.upstream import Upstream

log = logging.getLogger("greenroom.serve")

MAX_PER_CLIENT = 100
"""Resources one client (a connection, or a listen stream) may be subscribed to at once."""

Notify = Callable[[str], Awaitable[None]]
"""Tells a client that the resource it subscribed to under this URI was updated."""


class LimitReached(Exception):
    """A client asked for one subscription more than ``MAX_PER_CLIENT``."""


@attrs.define(eq=False)
class _Holder:
    notify: Notify
    uris: dict[str, tuple[str, str]] = attrs.field(factory=dict)  # offered uri -> (server, its own uri)


class Subscriptions:
    """Who holds which resource, and the subscriptions held upstream for them."""

    def __init__(self, upstream: Upstream, max_per_client: int = MAX_PER_CLIENT) -> None:
        self.upstream = upstream
        self.max_per_client = max_per_client
        self._holders: dict[Hashable, _Holder] = {}
        self._held: dict[tuple[str, str], set[Hashable]] = {}  # (server, its uri) -> who holds it
        self._lock = anyio.Lock()  # one change at a time: held upstream exactly while someone holds it

    def holding(self, client: Hashable) -> frozenset[str]:
        """The URIs ``client`` is subscribed to."""
        holder = self._holders.get(client)
        return frozenset(holder.uris) if holder is not None else frozenset()

    async def subscribe(self, client: Hashable, uri: str, notify: Notify) -> None:
        """``client`` holds ``uri`` (a ``KeyError`` for a URI no server offers, a
        ``LimitReached`` past the limit, the server's error if it refuses)."""
        async with self._lock:
            holder = self._holders.setdefault(client, _Holder(notify))
            if uri in holder.uris:
                return
            if len(holder.uris) >= self.max_per_client:
                raise LimitReached(
                    f"this client holds {len(holder.uris)} resource subscriptions, the gateway's limit: "
                    "unsubscribe from one first"
                )
            route = await self.upstream.locate(uri)
            try:
                await self._set(route, True)  # every time: a server restarted since forgot
            except BaseException:
                if not holder.uris:
                    del self._holders[client]
                raise
            holder.uris[uri] = route
            self._held.setdefault(route, set()).add(client)

    async def unsubscribe(self, client: Hashable, uri: str) -> None:
        async with self._lock:
            holder = self._holders.get(client)
            route = holder.uris.pop(uri, None) if holder is not None else None
            if holder is not None and not holder.uris:
                del self._holders[client]
            if route is not None:
                await self._let_go(client, route)

    async def drop(self, client: Hashable) -> None:
        """Every subscription of a client that is gone (its connection closed, its stream ended)."""
        with anyio.CancelScope(shield=True):
            async with self._lock:
                holder = self._holders.pop(client, None)
                for route in holder.uris.values() if holder is not None else ():
                    await self._let_go(client, route)

    async def updated(self, server: str, uri: str) -> None:
        """A server's resource was updated: every client that holds it is told, once."""
        told: set[tuple[Notify, str]] = set()
        for client in list(self._held.get((server, uri), ())):
            holder = self._holders.get(client)
            if holder is not None:
                told.update(
                    (holder.notify, offered) for offered, route in holder.uris.items() if route == (server, uri)
                )
        for notify, offered in told:
            try:
                await notify(offered)
            except Exception:  # a client that is gone hears nothing; the others still do
                log.debug("a resource update was not delivered", exc_info=True)

    async def _let_go(self, client: Hashable, route: tuple[str, str]) -> None:
        holders = self._held.get(route)
        if holders is None:
            return
        holders.discard(client)
        if not holders:
            del self._held[route]
            try:
                await self._set(route, False)
            except Exception:  # the server is gone or refuses: nothing is held there any more
                log.info("MCP server %r: unsubscribing from %r failed", route[0], route[1], exc_info=True)

    async def _set(self, route: tuple[str, str], on: bool) -> None:
        server, own = route
        use = (lambda s: s.subscribe_resource(own)) if on else (lambda s: s.unsubscribe_resource(own))
        await self.upstream.servers[server].with_session(use)


__all__ = ["MAX_PER_CLIENT", "LimitReached", "Notify", "Subscriptions"]
