"""Running plugin or tool code in a worker thread without letting it leave the event loop.

A ``SystemExit``, ``KeyboardInterrupt`` or ``GeneratorExit`` that code raises in the
thread is its own failure, and comes back as that exception, raised where the thread is
awaited. Handed over as it is, the event loop would take it as its own: a
``GeneratorExit`` thrown into the awaiting task closes the task's whole chain of
coroutines instead of being raised at the await, so no ``except`` of the caller sees it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import anyio.to_thread

from greenroom.failures import EXITS


async def run_in_thread(function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
    """``function(*args, **kwargs)`` in a worker thread; cancelling the wait (a timeout)
    leaves the thread to finish on its own."""
    call = functools.partial(_carried, function, args, kwargs)
    try:
        return await anyio.to_thread.run_sync(call, abandon_on_cancel=True)
    except _Exited as exited:
        raise exited.exc from None


def _carried(function: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    try:
        return function(*args, **kwargs)
    except EXITS as exc:
        raise _Exited(exc) from exc  # an Exception, which crosses to the event loop as any other


class _Exited(Exception):
    """A SystemExit, KeyboardInterrupt or GeneratorExit on its way out of a worker thread."""

    def __init__(self, exc: BaseException) -> None:
        super().__init__(repr(exc))
        self.exc = exc
