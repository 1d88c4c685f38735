"""Hands every event to the plugins' ``greenroom_event`` (the observers), from the first
event a runtime emits while it is being built to the last event of its last run.

The listener is whole when it is subscribed: nothing it reads is set later, so an event
emitted at any point of building a runtime (a tool found unusable as the tools load)
reaches the observers like any other. Each observer answers for itself: one that raises
is a ``PluginError`` for the bus's listeners (the trace, the live view), masked like
every event and named by plugin, distribution and hook; an observer failing the same way
on every event is reported once per run (once, for the events outside any run), the
rest only to the debug log. What is emitted while the observers are being called (such a
report, or an event an observer emits itself) goes to the listeners only, never to the
observers again.
"""

from __future__ import annotations

import logging
import weakref
from contextvars import ContextVar

from greenroom import events as ev
from greenroom.failures import PluginHookError
from greenroom.plugins.host import PluginHost
from greenroom.run.context import RunContext, current_run

log = logging.getLogger("greenroom")

_observing: ContextVar[bool] = ContextVar("greenroom_observing", default=False)
"""The observers are being called here (in this thread and task, not in others that emit
meanwhile): an event emitted now goes to the listeners only."""

_Failure = tuple[str, str]
"""An observer's failure as it is reported once: the plugin and its exception's type."""


class Observers:
    """The bus listener that calls ``greenroom_event`` with each event and its run."""

    def __init__(self, host: PluginHost, events: ev.EventBus) -> None:
        self._host = host
        self._events = events
        # forgotten with their run: a server of MCP clients running for months keeps only the live runs' reports
        self._reported: weakref.WeakKeyDictionary[RunContext, set[_Failure]] = weakref.WeakKeyDictionary()
        self._reported_outside: set[_Failure] = set()

    def __call__(self, event: ev.Event) -> None:
        if _observing.get():
            return
        token = _observing.set(True)
        try:
            ctx = current_run()
            _, failures = self._host.call_each_sync("greenroom_event", ctx=ctx, event=event)
            for failure in failures:
                log.debug("%s", failure, exc_info=failure.error)
                if self._first(ctx, failure):
                    self._events.emit(ev.PluginError.of(failure, getattr(event, "step", None)))
        finally:
            _observing.reset(token)

    def _first(self, ctx: RunContext | None, failure: PluginHookError) -> bool:
        """Whether this observer has not failed this way in this run before."""
        seen = self._reported_outside if ctx is None else self._reported.setdefault(ctx, set())
        key = (failure.plugin, type(failure.error).__name__)
        if key in seen:
            return False
        seen.add(key)
        return True
