"""Runs for clients without a session (MCP 2026-07-28): one run per caller, kept across
its requests for a while.

A 2025-11-25 client holds a connection, and its run lasts as long as the connection.
A 2026-07-28 request is self-contained: no handshake, no session id, a fresh connection
per request. A run per request would fold every single call into the priors as a whole
session of its own, and lose what a search found before the call that uses it. So the
gateway keeps one *logical* run per caller (the principal when the gateway knows who is
calling, the client's name with ``--per-client``, else one for every such client) and
ends it, so that what it learned is kept, once it has been idle for ``IDLE_SECONDS``,
has lasted ``MAX_AGE_SECONDS`` or made ``MAX_CALLS`` calls (operators change them with
``[serve]`` keys or the ``ENV`` variables); the caller's next request starts a new one. Ending happens at
that next request or when the gateway stops.

Requests of one caller come at once (a client with parallel tool calls, many clients
without a name). Each request holds its run (``lease`` ... ``release``) while it is
handled: a spent run is retired at once (new requests get a new run), and ended once the
last request still holding it lets go, never under a request that is using it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import attrs

from greenroom_gateway.clients import ClientRun

IDLE_SECONDS = 300.0
MAX_AGE_SECONDS = 1800.0
MAX_CALLS = 200
MAX_CALLERS = 10_000
"""Logical runs kept at once; past it the least recently used is ended first."""

ENV = {
    "idle": "GREENROOM_SERVE_SESSION_IDLE",
    "age": "GREENROOM_SERVE_SESSION_AGE",
    "calls": "GREENROOM_SERVE_SESSION_CALLS",
}
"""Environment variables an operator sets the three limits with (seconds, seconds, calls)."""


@attrs.frozen
class Limits:
    idle: float = IDLE_SECONDS
    age: float = MAX_AGE_SECONDS
    calls: int = MAX_CALLS

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None, **given: float | None) -> Limits:
        """The limits, each as ``given`` (``idle=``, ``age=``, ``calls=``: the ``[serve]``
        keys) unless None, else from its variable when it holds a positive number, else
        the default."""
        env = os.environ if environ is None else environ
        values: dict[str, float] = {}
        for field, var in ENV.items():
            chosen = given.get(field)
            if chosen is not None:
                values[field] = chosen
                continue
            try:
                value = float(env.get(var, ""))
            except ValueError:
                continue
            if value > 0:
                values[field] = value
        calls = int(values.pop("calls", MAX_CALLS))
        return cls(calls=calls, **values)


@attrs.define(eq=False)
class Held:
    """One kept run: since when, last used, how many requests hold it now, and whether
    it was retired (it ends when the last of them lets go)."""

    run: ClientRun
    started: float
    used: float
    holders: int = 0
    retired: bool = False


Later = Callable[..., Any]  # a task group's start_soon: (async function, run)
"""How a run retired under a request is ended once that request lets go: in the
background (the gateway's task group), so a request's teardown never waits on RunEnd."""


class LogicalRuns:
    """The kept runs of sessionless callers, by caller key."""

    def __init__(
        self, end: Callable[[ClientRun], Awaitable[None]], limits: Limits | None = None, later: Later | None = None
    ) -> None:
        self._end = end
        self.later = later
        self._held: dict[str, Held] = {}
        self.limits = limits or Limits.from_env()
        self.clock: Callable[[], float] = time.monotonic

    def __len__(self) -> int:
        return len(self._held)

    def _spent(self, held: Held, now: float) -> bool:
        lim = self.limits
        return now - held.used > lim.idle or now - held.started > lim.age or held.run.calls_made >= lim.calls

    async def lease(self, key: str, make: Callable[[], ClientRun]) -> Held:
        """The caller's run, held for one request until ``release``: the one kept for
        ``key`` unless it is spent, else a new one (``make()``)."""
        now = self.clock()
        held = self._held.get(key)
        if held is not None and self._spent(held, now):
            await self._retire(self._held.pop(key))
            held = None
        if held is None:
            while len(self._held) >= MAX_CALLERS:  # bounded: the least recently used goes first
                oldest = min(self._held, key=lambda k: self._held[k].used)
                await self._retire(self._held.pop(oldest))
            held = self._held[key] = Held(make(), now, now)
        held.used = now
        held.holders += 1
        return held

    async def release(self, held: Held) -> None:
        """The request is done with the run; a retired run ends with its last holder."""
        held.holders -= 1
        if held.retired and held.holders == 0:
            if self.later is not None:
                self.later(self._end_whole, held.run)
            else:
                await self._end_whole(held.run)

    async def _end_whole(self, run: ClientRun) -> None:
        with anyio.CancelScope(shield=True):  # a stop cancels the background: RunEnd still completes
            await self._end(run)

    async def _retire(self, held: Held) -> None:
        held.retired = True
        if held.holders == 0:
            await self._end(held.run)

    async def end_all(self) -> None:
        """End every kept run, held or not (the gateway is stopping: its requests are done
        or were cancelled)."""
        while self._held:
            _, held = self._held.popitem()
            held.retired = True
            held.holders = 0
            await self._end(held.run)


__all__ = ["ENV", "IDLE_SECONDS", "MAX_AGE_SECONDS", "MAX_CALLERS", "MAX_CALLS", "Limits", "LogicalRuns"]
