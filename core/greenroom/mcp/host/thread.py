"""The host: one background thread whose event loop owns every MCP connection.

Why a thread: the SDK's transports and ``ClientSession`` are async context managers that
must be entered and exited in the same task, and a session must outlive any one tool
call. A greenroom runtime, however, is built synchronously and may be used from several
event loops in turn (``anyio.run`` per command, per test), so no caller task is
guaranteed to live as long as a session. Each connection therefore runs in a dedicated
task of an anyio task group inside one background thread with its own event loop;
callers reach it through an anyio ``BlockingPortal``, whose cross-loop calls propagate
cancellation both ways. A hung server cannot block the caller's loop, and a caller's
timeout never tears an SDK cancel scope. A running host is known to
``greenroom.mcp.host.termination``, which stops it if the process is terminated or exits.
"""

from __future__ import annotations

import contextlib
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar, cast

import anyio
import anyio.from_thread
import anyio.lowlevel
import anyio.to_thread
from anyio.abc import TaskGroup
from anyio.from_thread import BlockingPortal

from greenroom.mcp.host import termination
from greenroom.tools.base import Asker, Progress

T = TypeVar("T")

# Upper bound for closing one connection (the SDK's own stdio shutdown is bounded by ~6 s),
# and so for the host thread to end once told to.
CLOSE_TIMEOUT = 10.0


class McpHost:
    """A daemon thread whose event loop owns MCP connections (see the module docstring).

    Started on first use; ``stop()`` ends it. Callers in any event loop use ``call``;
    synchronous callers (building a runtime) use ``call_blocking``.
    """

    def __init__(self) -> None:
        # Re-entrant: a termination signal can stop the host from the main thread while
        # that thread is inside ``_ensure`` holding this lock.
        self._lock = threading.RLock()
        self._portal: BlockingPortal | None = None
        self._tg: TaskGroup | None = None
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._portal is not None

    def _ensure(self) -> BlockingPortal:
        with self._lock:
            if self._portal is not None:
                return self._portal
            ready = threading.Event()
            failure: list[BaseException] = []

            async def main() -> None:
                async with BlockingPortal() as portal, anyio.create_task_group() as tg:
                    self._portal, self._tg = portal, tg
                    ready.set()
                    await portal.sleep_until_stopped()
                    tg.cancel_scope.cancel()

            def run() -> None:
                try:
                    anyio.run(main)
                except BaseException as exc:  # pragma: no cover - the loop itself failed
                    failure.append(exc)
                    ready.set()
                finally:
                    self._portal = self._tg = None

            # Daemon: a program that forgets to close its runtime still exits; its stdio
            # servers then see their stdin close and exit too.
            thread = threading.Thread(target=run, name="greenroom-mcp", daemon=True)
            thread.start()
            ready.wait()
            if failure or self._portal is None:  # pragma: no cover
                raise RuntimeError(f"the MCP host loop did not start: {failure[:1]}")
            self._thread = thread
            termination.track(self)  # before any server starts
            return self._portal

    @property
    def task_group(self) -> TaskGroup:
        """The host's task group (only valid inside the host loop)."""
        assert self._tg is not None, "the MCP host is not running"
        return self._tg

    async def call(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Await ``func(*args)`` in the host loop; cancelling the caller cancels it there."""
        portal = self._ensure()
        call_async = getattr(portal, "call_async", None)
        if call_async is not None:  # anyio >= 4.16
            return cast(T, await call_async(func, *args, abandon_on_cancel=True))
        future = portal.start_task_soon(func, *args)  # pragma: no cover - older anyio
        try:  # pragma: no cover
            return await anyio.to_thread.run_sync(future.result, abandon_on_cancel=True)
        except anyio.get_cancelled_exc_class():  # pragma: no cover
            future.cancel()
            raise

    def call_blocking(self, func: Callable[..., Awaitable[T]], *args: Any) -> T:
        """Run ``func(*args)`` in the host loop and wait (from synchronous code)."""
        return self._ensure().call(func, *args)

    def stop(self) -> None:
        """Stop the loop (cancelling whatever still runs there) and join the thread."""
        with self._lock:
            portal, thread = self._portal, self._thread
            self._thread = None
        termination.untrack(self)
        if portal is not None:
            with contextlib.suppress(RuntimeError):  # already stopping
                portal.call(portal.stop, True)
        if thread is not None and thread is not threading.current_thread():
            thread.join(CLOSE_TIMEOUT)

    async def astop(self) -> None:
        await anyio.to_thread.run_sync(self.stop)


def in_caller_loop(progress: Progress | None) -> Any:
    """``progress`` as the SDK's callback, which runs in the host loop: each report is
    handed to the caller's loop, in order (a short wait for a notification to be sent)."""
    if progress is None:
        return None
    token = anyio.lowlevel.current_token()

    async def report(done: float, total: float | None, message: str | None) -> None:
        async def send() -> None:
            await progress(done, total, message)

        # waiting here, in the host loop, keeps the reports in the order the server sent
        # them; the caller's loop only sends a notification, and never waits on this loop
        try:
            anyio.from_thread.run(send, token=token)
        except Exception:  # a listener that is gone (its client left) must not fail the call
            logging.getLogger(__name__).debug("a progress report was not delivered", exc_info=True)

    return report


def asked_in_caller_loop(ask: Asker | None) -> Asker | None:
    """``ask`` for the SDK's elicitation callback, which runs in the host loop: the
    question is put to the caller's loop, and its answer awaited in a worker thread, so
    a person who takes minutes to answer holds neither loop (a call that gives up first
    abandons the wait; the caller's side ends its own question)."""
    return None if ask is None else _AskedThere(ask, anyio.lowlevel.current_token())


class _AskedThere:
    """An asker reached from the host loop; equal to another for the same asker (the calls
    of one client are one asker to their server, ``Connection.elicit``)."""

    def __init__(self, ask: Asker, token: Any) -> None:
        self.ask, self.token = ask, token

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _AskedThere) and other.ask == self.ask

    def __hash__(self) -> int:
        return hash(self.ask)

    async def __call__(self, params: Any) -> Any:
        put = functools.partial(anyio.from_thread.run, cast(Any, self.ask), params, token=self.token)
        return await anyio.to_thread.run_sync(put, abandon_on_cancel=True)


__all__ = ["CLOSE_TIMEOUT", "McpHost", "asked_in_caller_loop", "in_caller_loop"]
