"""Resumable streams over streamable HTTP: the gateway's event store (the SDK's ``EventStore``).

A 2025-11-25 client's answers and notifications go out as SSE events, each with an id, and
every stream opens with a priming event (an id, no data, and ``retry``: how long a client
waits before it reconnects). A client whose connection dropped reconnects with
``Last-Event-ID`` and gets what it missed of that stream, then the rest as it comes; the
call it was waiting on goes on meanwhile, and its result is not lost.

The store is in memory, one per replica, and bounded: at most ``MAX_EVENTS`` events, none
older than ``MAX_AGE_SECONDS`` (the oldest go first). An id it no longer holds, or never
held (another replica's, an earlier process's: each store's ids carry a prefix of its own),
resumes nothing: the stream ends at once, and the client asks again. Behind a load balancer
a 2025-11-25 session lives on the replica that opened it (its session id is unknown to the
others, which answer 404, so the client opens a new session there); resuming needs the
balancer to send a session's requests to its replica (affinity on ``Mcp-Session-Id``).
2026-07-28 requests have no sessions and no resumable streams (the revision took them out
of the core), so a fleet serves them anywhere.

A stream is replayed only to the session it belongs to. The SDK shares one store among all
sessions, and its stream ids (a request's id, ``_GET_stream``) repeat from session to
session; so each event keeps the ``Owner`` of the HTTP request in which it was stored (the
session that request belongs to, learned from the ``Mcp-Session-Id`` it carries or is
answered with: ``owning``), and a replay gives only events of the session that asks, never
another's.
"""

from __future__ import annotations

import collections
import contextvars
import itertools
import secrets
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import attrs

from greenroom_gateway.ops.http import ASGIApp, Message, Receive, Scope, Send

if TYPE_CHECKING:
    from mcp.server.streamable_http import EventCallback, EventStore

MAX_EVENTS = 10_000
MAX_AGE_SECONDS = 300.0
RETRY_MS = 1_000
"""The ``retry`` of each priming event: how long a client waits before it reconnects."""

_SESSION_HEADER = b"mcp-session-id"


@attrs.define(eq=False)
class Owner:
    """The session the HTTP request being answered belongs to (None until it is known: the
    request that opens a session learns it from its answer's headers)."""

    session: str | None = None


_owner: contextvars.ContextVar[Owner | None] = contextvars.ContextVar("greenroom_serve_owner", default=None)


def owning(app: ASGIApp) -> ASGIApp:
    """``app`` with each HTTP request's ``Owner`` known while it is answered (and in the
    tasks it starts: a session's own tasks start in the request that opened it)."""

    async def with_owner(scope: Scope, receive: Receive, send: Send) -> None:
        if scope.get("type") != "http":
            await app(scope, receive, send)
            return
        said = dict(scope.get("headers", ())).get(_SESSION_HEADER)
        owner = Owner(said.decode("latin-1") if said else None)

        async def learn(message: Message) -> None:
            if owner.session is None and message.get("type") == "http.response.start":
                given = dict(message.get("headers", ())).get(_SESSION_HEADER)
                owner.session = bytes(given).decode("latin-1") if given else None
            await send(message)

        token = _owner.set(owner)
        try:
            await app(scope, receive, learn)
        finally:
            _owner.reset(token)

    return with_owner


@attrs.define(eq=False)
class _Event:
    stream: str
    owner: Owner | None
    message: Any  # a JSONRPCMessage; None for a priming event
    at: float


def event_store(max_events: int = MAX_EVENTS, max_age: float = MAX_AGE_SECONDS) -> EventStore:
    """A new bounded in-memory store (the SDK's interface, imported with the SDK)."""
    from mcp.server.streamable_http import EventMessage, EventStore

    class BoundedEventStore(EventStore):
        def __init__(self) -> None:
            self.max_events, self.max_age = max_events, max_age
            self.clock: Callable[[], float] = time.monotonic
            self._events: collections.OrderedDict[str, _Event] = collections.OrderedDict()
            self._prefix = secrets.token_hex(6)
            self._serial = itertools.count(1)

        @property
        def size(self) -> int:  # not __len__: the SDK tests the store for truth
            return len(self._events)

        def _expire(self, now: float) -> None:
            events = self._events
            while events and (len(events) > self.max_events or now - next(iter(events.values())).at > self.max_age):
                events.popitem(last=False)

        async def store_event(self, stream_id: str, message: Any) -> str:
            now = self.clock()
            event_id = f"{self._prefix}-{next(self._serial)}"
            self._events[event_id] = _Event(stream_id, _owner.get(), message, now)
            self._expire(now)
            return event_id

        async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> str | None:
            self._expire(self.clock())
            last = self._events.get(last_event_id)
            asking = _owner.get()
            if last is None or not _same_session(last.owner, asking):
                return None  # gone, never ours, or another session's: nothing to resume
            ids = list(self._events)
            later = [
                (i, e)
                for i, e in ((i, self._events[i]) for i in ids[ids.index(last_event_id) + 1 :])
                if e.stream == last.stream and e.message is not None and _same_session(e.owner, asking)
            ]
            for event_id, event in later:
                await send_callback(EventMessage(event.message, event_id))
            return last.stream

    return BoundedEventStore()


def _same_session(kept: Owner | None, asking: Owner | None) -> bool:
    return kept is not None and asking is not None and kept.session is not None and kept.session == asking.session


__all__ = ["MAX_AGE_SECONDS", "MAX_EVENTS", "RETRY_MS", "Owner", "event_store", "owning"]
