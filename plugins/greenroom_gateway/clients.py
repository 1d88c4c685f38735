"""One client of the gateway as one greenroom run: its session, its view, its calls.

A connected client holds a ``Run`` of kind ``CLIENT`` (``greenroom.run.driver``) that
lasts as long as it stays connected: started on its first request, its first step's
request is what the client sees (the tools, and the system sections' text as the
instructions). Each call the client makes is a client turn: the call through
greenroom's call path, then the next step's request (whose tools may differ: a strategy
that adds found tools). RunEnd when the client leaves, so what the plugins learn from
its calls is kept.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from greenroom import events as ev
from greenroom.config import AgentConfig
from greenroom.failures import PluginHookError, first_error
from greenroom.models import ModelRequest
from greenroom.run.context import RunContext, RunKind
from greenroom.serve.caller import Caller, current_caller
from greenroom.tools import ToolDescriptor, ToolResult

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from greenroom.run.runtime import Runtime
    from greenroom.tools.base import Progress


log = logging.getLogger("greenroom.serve")
_serials = itertools.count(1)


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
    """The run of one connected client. ``ready`` before anything, ``end`` once."""

    def __init__(self, runtime: Runtime, *, client_name: str | None = None) -> None:
        made_for = current_caller.get()  # an OAuth caller's view and principal (greenroom.serve.views)
        self.caller: Caller | None = made_for.caller if made_for is not None else None
        if made_for is not None and made_for.per_principal:
            client_name = f"{made_for.caller.name}.{client_name}" if client_name else made_for.caller.name
        self.client_name = client_name
        self.serial = next(_serials)
        """This run's number in the process (the log's and the limits' name for a connection)."""
        self.session = runtime.session()
        agent = agent_for(runtime, client_name) if client_name else runtime.agent
        self.run = runtime.start_run(self.session, kind=RunKind.CLIENT, agent=agent)
        if made_for is not None and made_for.hidden is not None:
            runtime.scoping.restrict(self.run.ctx, made_for.hidden)  # before its scope is worked out
        self.view = ClientView((), "")
        self.notify: Callable[[], Awaitable[None]] | None = None
        """Tells the client its tools changed (a 2025-11-25 connection's notification)."""
        self.calls_made = 0
        self._lock = anyio.Lock()  # the phases of one client's steps never interleave
        self._start_lock = anyio.Lock()

    @property
    def ctx(self) -> RunContext:
        return self.run.ctx

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

    async def call(self, name: str, arguments: Mapping[str, Any] | None) -> tuple[ToolResult, bool]:
        """Run one call the client made; returns its result and whether the view changed.
        The result stands whatever happens after it: a step that fails to build the next
        view keeps the one before (and is reported), never turns a call that ran into an
        error the client might retry."""
        async with self._lock:
            call = self.run.take_client_call(name, arguments)
        result = await self.run.call_tool(call)
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
                failure = first_error(exc)
                if isinstance(failure, PluginHookError):
                    self.ctx.emit(ev.PluginError.of(failure, self.ctx.step))
                log.warning("the view %s could not be built; the last one stands: %s", when, failure)
            return self.view != before

    async def end(self, *, cancelled: bool = False) -> None:
        """RunEnd for every plugin (once), then the trace's last event for this client."""
        if self.run.ended or not self.run.announced:
            return
        await self.run.end(self.run.outcome_of("cancelled" if cancelled else "final"))


def sessionless(conn: Any) -> bool:
    """Whether a connection speaks a revision without sessions (2026-07-28 and later)."""
    from mcp_types.version import MODERN_PROTOCOL_VERSIONS

    return conn.protocol_version in MODERN_PROTOCOL_VERSIONS


def client_name_of(conn: Any) -> str | None:
    """The name a client gave (``initialize``, or a sessionless request's ``_meta``)."""
    params = conn.client_params
    return params.client_info.name if params is not None else None


def progress_to(ctx: ServerRequestContext[Any, Any]) -> Progress | None:
    """How a call reports progress to the client that made it: notifications with the
    request's progress token; None when the client gave none."""
    from mcp.shared.jsonrpc_dispatcher import progress_token_from_params  # the SDK is here: a client is

    token = progress_token_from_params(ctx.params)
    if token is None:
        return None

    async def report(done: float, total: float | None, message: str | None) -> None:
        await ctx.session.send_progress_notification(
            token,
            done,
            total,
            message,
            related_request_id=ctx.request_id,  # type: ignore[arg-type]
        )

    return report


__all__ = ["ClientRun", "ClientView", "agent_for", "client_name_of", "progress_to", "sessionless"]
