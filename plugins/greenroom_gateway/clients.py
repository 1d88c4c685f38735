"""One client of the gateway as one greenroom run: who it is for, its view, its calls.

A connected client holds a ``Run`` of kind ``CLIENT`` that lasts as long as it stays
connected (a sessionless caller's, as long as ``sessions`` keeps it): started on its first
request, its first step's request is what the client sees (the tools, and the system
sections' text as the instructions). Each call the client makes is a client turn
(``Run.take_client_call``, ``Run.call_tool``), then the next step's request (whose tools
may differ: a strategy that adds found tools). RunEnd when the client leaves, so what
the plugins learn from its calls is kept.

The run is made for a ``Caller`` when the gateway knows who calls (an OAuth token), with
that caller's view (``oauth.views``: the tools its scopes do not reach) as the run's
``restrict``, and, with priors per principal, an agent named after it.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

import anyio
import attrs

from greenroom import (
    AgentConfig,
    ModelRequest,
    PluginError,
    PluginHookError,
    RunFilter,
    RunKind,
    Runtime,
    ToolDescriptor,
    ToolResult,
)

log = logging.getLogger("greenroom.serve")
_serials = itertools.count(1)

Progress = Callable[[float, float | None, str | None], Awaitable[None]]
"""Where a call's progress goes: ``(done, total, message)`` (``Run.call_tool``'s ``progress``)."""


@attrs.frozen
class Caller:
    """Who sent a request: the token's principal (issuer, subject, client) and scopes."""

    issuer: str | None
    subject: str | None
    client_id: str
    scopes: frozenset[str]

    @property
    def name(self) -> str:
        """The principal as one name (priors per principal): the subject, else the client."""
        return self.subject or self.client_id or "anonymous"

    @property
    def key(self) -> str:
        """Whose kept run a request uses: principal and scopes (a view depends on both),
        so a run kept for one caller is never another's."""
        scopes = " ".join(sorted(self.scopes))
        return "principal:" + "\x1f".join([self.issuer or "", self.subject or "", self.client_id, scopes])


NOBODY = Caller(None, None, "", frozenset())
"""A caller without any scope: what is offered to nobody in particular may show only that."""


@attrs.frozen
class ClientView:
    """What a client is offered on a step: the tools, and the system text beside them."""

    tools: tuple[ToolDescriptor, ...]
    instructions: str

    def tool_names(self) -> tuple[str, ...]:
        return tuple(d.name for d in self.tools)

    @classmethod
    def of(cls, request: ModelRequest) -> ClientView:
        text = "\n\n".join(s.text for s in request.system if s.text.strip())
        return cls(tuple(request.tools), text)


def agent_for(runtime: Runtime, client_name: str | None) -> AgentConfig:
    """The runtime's agent, or one whose id adds the client's name (priors per client)."""
    if not client_name:
        return runtime.agent
    safe = "".join(c if c.isalnum() or c in "-_." else "-" for c in client_name.strip())[:64] or "client"
    return attrs.evolve(runtime.agent, id=f"{runtime.agent.id}.{safe}")


class ClientRun:
    """The run of one client. ``ready`` before anything, ``end`` once.

    ``caller`` is who it is for (None when the gateway cannot tell), ``view`` what that
    caller may not see (the run's ``restrict``); with ``per_principal`` the priors it
    learns are the caller's own (its agent id names the caller, then the client)."""

    def __init__(
        self,
        runtime: Runtime,
        *,
        client_name: str | None = None,
        caller: Caller | None = None,
        view: RunFilter | None = None,
        per_principal: bool = False,
    ) -> None:
        self.caller = caller
        if caller is not None and per_principal:
            client_name = f"{caller.name}.{client_name}" if client_name else caller.name
        self.client_name = client_name
        self.serial = next(_serials)
        """This run's number in the process (the log's and the limits' name for a connection)."""
        agent = agent_for(runtime, client_name)
        self.run = runtime.start_run(runtime.session(), kind=RunKind.CLIENT, agent=agent, restrict=view)
        self.view = ClientView((), "")
        self.notify: Callable[[], Awaitable[None]] | None = None
        """Tells the client its tools changed (a 2025-11-25 connection's notification)."""
        self.calls_made = 0
        self._lock = anyio.Lock()  # the phases of one client's steps never interleave
        self._start_lock = anyio.Lock()

    async def ready(self) -> None:
        """Start the run unless it started already (the client's requests may race)."""
        async with self._start_lock:
            if not self.run.started:
                await self.start()

    async def start(self) -> ClientView:
        async with self._lock:
            await self.run.start()
            self.view = ClientView.of(await self.run.next_request())
        return self.view

    async def call(
        self, name: str, arguments: Mapping[str, Any] | None, progress: Progress | None = None
    ) -> tuple[ToolResult, bool]:
        """Run one call the client made; returns its result and whether the view changed.
        The result stands whatever happens after it: a step that fails to build the next
        view keeps the one before (and is reported), never turns a call that ran into an
        error the client might retry."""
        async with self._lock:
            call = self.run.take_client_call(name, arguments)
        result = await self.run.call_tool(call, progress=progress)
        self.calls_made += 1
        # each call's step offers the next view, also one that raced another
        return result, await self._next_view(f"after a call of {name!r}")

    async def refresh(self) -> bool:
        """The next step's view, because the tools changed under this run (an upstream
        server listed new ones); whether the view changed."""
        if not self.run.started or self.run.ended:
            return False
        return await self._next_view("after upstream tools changed")

    async def _next_view(self, when: str) -> bool:
        """Take the next step's view; a step that fails keeps the one before (reported)."""
        async with self._lock:
            before = self.view
            try:
                self.view = ClientView.of(await self.run.next_request())
            except Exception as exc:
                if isinstance(exc, PluginHookError):
                    self.run.ctx.emit(PluginError.of(exc, self.run.ctx.step))
                log.warning("the view %s could not be built; the last one stands: %s", when, exc)
            return self.view != before

    async def end(self, *, cancelled: bool = False) -> None:
        """RunEnd for every plugin (once), then the trace's last event for this client."""
        if self.run.ended or not self.run.announced:
            return
        await self.run.end(self.run.outcome_of("cancelled" if cancelled else "final"))


__all__ = ["NOBODY", "Caller", "ClientRun", "ClientView", "Progress", "agent_for"]
