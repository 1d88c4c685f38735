"""Which plugin code runs off the event loop: a plain implementation of a hook called
during a run goes to a worker thread, so a plugin that blocks (a synchronous HTTP call,
a lock, a sleep) stalls only itself and is bounded like an async one."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Coroutine
from typing import Any

from greenroom._support.threads import run_in_thread

RUN_HOOKS = frozenset(
    {
        "greenroom_run_start",
        "greenroom_hidden_tools",
        "greenroom_before_inference",
        "greenroom_after_inference",
        "greenroom_resolve_tool_call",
        "greenroom_before_tool_execute",
        "greenroom_result_cut",
        "greenroom_after_tool_execute",
        "greenroom_run_end",
        "greenroom_rank_tools",
        "greenroom_search_tools",
    }
)
"""Hooks called on the event loop during a run: a plain implementation of one runs in a
worker thread unless its plugin is ``nonblocking``."""


def is_async(function: Callable[..., Any]) -> bool:
    """Whether calling ``function`` gives a coroutine: an ``async def``, or a plain function
    that a decorator wrapped around one (``functools.wraps``)."""
    return inspect.iscoroutinefunction(getattr(function, "__wrapped__", function))


def runs_in_thread(function: Callable[..., Any], hook: str, nonblocking: bool) -> bool:
    """Whether a plain implementation is run in a worker thread (see ``RUN_HOOKS``)."""
    return not nonblocking and hook in RUN_HOOKS and not is_async(function)


def in_thread(function: Callable[..., Any]) -> Callable[..., Coroutine[Any, Any, Any]]:
    """``function`` as a coroutine function that runs it in a worker thread
    (``greenroom._support.threads``); cancelling it (a timeout) leaves the thread to
    finish on its own."""

    async def threaded(*args: Any, **kwargs: Any) -> Any:
        return await run_in_thread(function, *args, **kwargs)

    return threaded
