"""The gateway's ``tools/call``s in progress: at most so many per client, and all of them
cancellable at once when the gateway stops.

A client is who the gateway can tell apart (``client_key``): the OAuth principal when a
token names one (all of its connections together), else the connection of a 2025-11-25
client, else the name a 2026-07-28 client gives (``*`` when it gives none). A call past
the limit is refused at once, never queued: the count is a number per client, dropped
when it falls back to zero, so nothing grows with the clients that came and went.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

import anyio
import attrs

if TYPE_CHECKING:
    from greenroom_gateway.clients import ClientRun

MAX_CALLS_PER_CLIENT = 16
"""Calls one client may have in progress at once, unless told otherwise."""


def client_key(run: ClientRun, sessionless: bool, client_name: str | None) -> str:
    """Who a call counts against (see the module's docstring)."""
    caller = run.caller
    if caller is not None:
        return "principal:" + "|".join([caller.issuer or "", caller.subject or "", caller.client_id])
    if not sessionless:
        return f"connection:{run.serial}"
    return f"client:{client_name}" if client_name else "*"


@attrs.define(eq=False)
class Admitted:
    """One call let in: cancelled (with ``reason``) if the gateway stops before it ends."""

    scope: anyio.CancelScope = attrs.field(factory=anyio.CancelScope)
    reason: str = ""


class Calls:
    """The calls in progress, per client, with the limit of each."""

    def __init__(self, per_client: int = MAX_CALLS_PER_CLIENT) -> None:
        if per_client < 1:
            raise ValueError("the calls per client must be at least 1")
        self.per_client = per_client
        self._held: dict[str, int] = {}
        self._running: set[Admitted] = set()

    def __len__(self) -> int:
        return len(self._running)

    def in_progress(self, key: str) -> int:
        return self._held.get(key, 0)

    @contextmanager
    def admitted(self, key: str) -> Iterator[Admitted | None]:
        """The call's admission for as long as it runs, or None when ``key`` has as many
        calls in progress as it may (then the caller answers with ``refusal``)."""
        held = self._held.get(key, 0)
        if held >= self.per_client:
            yield None
            return
        self._held[key] = held + 1
        call = Admitted()
        self._running.add(call)
        try:
            yield call
        finally:
            self._running.discard(call)
            left = self._held[key] - 1
            if left:
                self._held[key] = left
            else:
                del self._held[key]

    def refusal(self) -> str:
        n = self.per_client
        return (
            f"too many calls at once: this client already has {n} calls in progress, the gateway's limit "
            f"(--max-calls-per-client {n}); this call was not run: wait for one to finish, then call again"
        )

    def cancel_all(self, reason: str) -> int:
        """Cancel every call in progress (each answers its client with ``reason``); how many."""
        running = list(self._running)
        for call in running:
            call.reason = reason
            call.scope.cancel()
        return len(running)


__all__ = ["MAX_CALLS_PER_CLIENT", "Admitted", "Calls", "client_key"]
