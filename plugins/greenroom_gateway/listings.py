"""The upstream servers' listings as the gateway follows them: those it starts with, and
those that change while it serves.

``greenroom serve`` builds its runtime from what is known without starting a server (the
listings cached on disk), so a client's ``initialize`` (or ``server/discover``) is
answered at once, whatever the servers take to start. The servers never listed are then
listed, and the ``start = "eager"`` ones started, concurrently, each within its
``connect_timeout``; their tools join as those of a server that listed new ones do. A
request that needs the tools (``tools/list``, ``tools/call``) waits for that, at most the
longest ``connect_timeout`` of those servers, and the log says whom it waits for; a
server that fails to start is logged and left out until a later call starts it.
"""

from __future__ import annotations

import contextlib
import logging
from typing import TYPE_CHECKING

import anyio
from anyio.streams.memory import MemoryObjectReceiveStream

if TYPE_CHECKING:
    from greenroom import Runtime

log = logging.getLogger("greenroom.serve")


class FirstListing:
    """The listing of the servers the gateway starts with, done in the background."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._done: anyio.Event | None = None  # None: nothing is being listed
        self._waits_for: list[str] = []
        self._bound = 0.0

    async def run(self) -> bool:
        """List and start what the runtime was built without; whether a server was listed
        for the first time (its tools are then the runtime's to take in)."""
        mcp = self.runtime.mcp
        pending = mcp.pending() if mcp is not None else []
        if mcp is None or not pending:
            return False
        self._done = anyio.Event()
        self._waits_for = [s.name for s in pending]
        self._bound = max(s.config.connect_timeout for s in pending)
        first = any(s.listing is None for s in pending)
        await mcp.prepare(late=True)
        return first

    def finish(self) -> None:
        """Whatever the listing came to, requests wait for it no longer."""
        if self._done is not None:
            self._done.set()

    async def wait(self, method: str) -> None:
        """Until the first listing is done (a request that needs the tools), bounded."""
        done = self._done
        if done is None or done.is_set():
            return
        names = ", ".join(repr(n) for n in self._waits_for)
        log.info("%s waits for MCP servers %s to start (at most %g s)", method, names, self._bound)
        with anyio.move_on_after(self._bound):
            await done.wait()
        if not done.is_set():  # each start is bounded by its connect_timeout: a backstop
            log.warning("%s goes on without MCP servers %s, which did not start in time", method, names)


def upstream_changes(runtime: Runtime) -> MemoryObjectReceiveStream[None] | None:
    """A stream that says (at most one notice pending) when an upstream server's tools
    changed; told in the MCP host's thread, read in the caller's loop."""
    mcp = runtime.mcp
    if mcp is None:
        return None
    send, receive = anyio.create_memory_object_stream[None](1)
    token = anyio.lowlevel.current_token()

    def put() -> None:
        with contextlib.suppress(anyio.WouldBlock):  # a notice is pending already
            send.send_nowait(None)

    def heard() -> None:
        try:
            anyio.from_thread.run_sync(put, token=token)
        except Exception:  # the gateway is stopping
            log.debug("an upstream change was not handed on", exc_info=True)

    mcp.on_change(heard)
    return receive


__all__ = ["FirstListing", "upstream_changes"]
