"""Typed events for every phase, an in-process bus, and the JSONL trace writer.

The same events feed logging, the CLI's live view, traces and the tests.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import attrs


@attrs.frozen
class Event:
    """Base of every event; ``kind`` names it in traces."""

    kind: str = attrs.field(init=False, default="event")

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=True)


@attrs.frozen
class RunStarted(Event):
    kind: str = attrs.field(init=False, default="run_start")
    run_id: str = ""
    session_id: str = ""
    agent_id: str = ""
    input: str = ""


@attrs.frozen
class RequestSent(Event):
    kind: str = attrs.field(init=False, default="request")
    step: int = 0
    system_tokens: int = 0
    tools_tokens: int = 0
    messages_tokens: int = 0
    prefix_hash: str = ""
    tool_names: tuple[str, ...] = ()
    deferred_tools: tuple[str, ...] = ()
    """Tools sent for the provider's hosted search to load (not counted in ``tools_tokens``)."""

    @property
    def total_tokens(self) -> int:
        return self.system_tokens + self.tools_tokens + self.messages_tokens


@attrs.frozen
class ResponseReceived(Event):
    kind: str = attrs.field(init=False, default="response")
    step: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    cache_write_tokens: int = 0
    text: str = ""
    tool_calls: tuple[dict[str, Any], ...] = ()


@attrs.frozen
class ToolCallResolved(Event):
    kind: str = attrs.field(init=False, default="resolve")
    step: int = 0
    call_id: str = ""
    requested: str = ""
    resolved: str = ""


@attrs.frozen
class ToolExecuted(Event):
    kind: str = attrs.field(init=False, default="tool_result")
    step: int = 0
    call_id: str = ""
    tool: str = ""
    arguments: Any = None
    is_error: bool = False
    content: str = ""
    duration_ms: float = 0.0
    decided_by: str | None = None


@attrs.frozen
class SearchPerformed(Event):
    kind: str = attrs.field(init=False, default="search")
    step: int = 0
    query: str = ""
    mode: str = ""
    results: tuple[tuple[str, float], ...] = ()
    missing: tuple[str, ...] = ()


@attrs.frozen
class ToolPromoted(Event):
    kind: str = attrs.field(init=False, default="promote")
    step: int = 0
    tool: str = ""
    reason: str = ""


@attrs.frozen
class ToolDeferred(Event):
    kind: str = attrs.field(init=False, default="defer")
    step: int = 0
    tool: str = ""
    reason: str = ""


@attrs.frozen
class GroupLoaded(Event):
    kind: str = attrs.field(init=False, default="group_load")
    step: int = 0
    group: str = ""
    tools: tuple[str, ...] = ()
    error: str | None = None


@attrs.frozen
class PriorsLoaded(Event):
    kind: str = attrs.field(init=False, default="priors_load")
    agent_id: str = ""
    tools: int = 0
    sessions: int = 0
    source: str = ""


@attrs.frozen
class PriorsSaved(Event):
    kind: str = attrs.field(init=False, default="priors_save")
    agent_id: str = ""
    tools: int = 0
    sessions: int = 0


@attrs.frozen
class PluginError(Event):
    kind: str = attrs.field(init=False, default="error")
    plugin: str = ""
    distribution: str = ""
    hook: str = ""
    message: str = ""


@attrs.frozen
class PluginWarning(Event):
    """A plugin carried on without something it wanted (a store that is down, say)."""

    kind: str = attrs.field(init=False, default="warning")
    plugin: str = ""
    hook: str = ""
    message: str = ""


@attrs.frozen
class RunFinished(Event):
    kind: str = attrs.field(init=False, default="run_end")
    run_id: str = ""
    steps: int = 0
    stop_reason: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0


Listener = Callable[[Event], None]


class EventBus:
    """Delivers each event to every listener, in the order they subscribed."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        for listener in list(self._listeners):
            listener(event)


class TraceWriter:
    """Writes one JSON object per event to a file, flushed line by line."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh: IO[str] = self.path.open("a", encoding="utf-8")

    def __call__(self, event: Event) -> None:
        record = {"ts": round(time.time(), 6), **event.to_json()}
        self._fh.write(json.dumps(record, ensure_ascii=False, default=str) + "\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()
