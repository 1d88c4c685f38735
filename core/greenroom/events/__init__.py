"""Typed events for every phase, an in-process bus, and the JSONL trace writer.

The same events feed logging, the CLI's live view, traces and the tests. Plugins define
events of their own by subclassing ``Event``: the trace writes any event through
``to_json`` and the live view prints any event through ``describe`` and ``style``, so
nothing here needs to know a plugin's events.
"""

from greenroom.events.bus import EventBus, Listener, TraceWriter
from greenroom.events.kinds import (
    ClientCalled,
    Event,
    GroupLoaded,
    InternalError,
    PluginError,
    PluginWarning,
    Rejection,
    RequestSent,
    ResponseReceived,
    RunFinished,
    RunStarted,
    StableSectionChanged,
    ToolCallRejected,
    ToolCallResolved,
    ToolsRelisted,
    ToolUnusable,
    short,
    short_text,
)
from greenroom.events.results import MediaDropped, ResultCut, ToolExecuted

__all__ = [
    "ClientCalled",
    "Event",
    "EventBus",
    "GroupLoaded",
    "InternalError",
    "Listener",
    "MediaDropped",
    "PluginError",
    "PluginWarning",
    "Rejection",
    "RequestSent",
    "ResponseReceived",
    "ResultCut",
    "RunFinished",
    "RunStarted",
    "StableSectionChanged",
    "ToolCallRejected",
    "ToolCallResolved",
    "ToolExecuted",
    "ToolUnusable",
    "ToolsRelisted",
    "TraceWriter",
    "short",
    "short_text",
]
