"""Following a server's ``notifications/tools/list_changed``: list it again, one listing
at a time, in the host loop. A notice that arrives during a listing asks for one more
after it, so the last listing is never older than the last notice; a listing that fails
is a warning, and the tools stay as they were until the next notice or start."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import anyio

from greenroom._support.redact import Redactor
from greenroom.mcp.host import McpHost

log = logging.getLogger(__name__)


class ListFollower:
    """Lists one server again each time it says its tools changed.

    ``relist`` lists the live session (it may raise; False when there is none), in a
    task of ``host``; ``timeout`` bounds each listing.
    """

    def __init__(
        self,
        server: str,
        relist: Callable[[], Awaitable[bool]],
        host: McpHost,
        *,
        timeout: float,
        redact: Redactor,
    ) -> None:
        self._server, self._relist, self._host = server, relist, host
        self._timeout, self._redact = timeout, redact
        self._running = self._again = False
        self._done: anyio.Event | None = None

    def changed(self) -> None:
        """The server said so (called in the host loop, by the session's reader)."""
        if self._running:
            self._again = True
            return
        self._running = True
        self._done = anyio.Event()
        self._host.task_group.start_soon(self._follow)

    async def settled(self) -> None:
        """Wait for the listing in progress, if any (in the host loop). A call during
        which the server said its tools changed returns after they are listed, so the
        step after it offers them."""
        if self._done is not None:
            await self._done.wait()

    async def _follow(self) -> None:
        try:
            again = True
            while again:
                self._again = False
                try:
                    with anyio.fail_after(self._timeout):
                        if not await self._relist():
                            return  # no live session: its next start lists it anyway
                except Exception as exc:
                    why = self._redact(f"{type(exc).__name__}: {exc}")
                    log.warning(
                        "MCP server %r said its tools changed; listing them again failed: %s", self._server, why
                    )
                    return
                again = self._again
        finally:
            self._running = False
            done, self._done = self._done, None
            if done is not None:
                done.set()


__all__ = ["ListFollower"]
