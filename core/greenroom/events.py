"""Typed events for every phase, an in-process bus, and the JSONL trace writer.

The same events feed logging, the CLI's live view, traces and the tests. Plugins define
events of their own by subclassing ``Event``: the trace writes any event through
``to_json`` and the live view prints any event through ``describe`` and ``style``, so
nothing here needs to know a plugin's events.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

import attrs

from greenroom.failures import RunFailure


@attrs.frozen
class Event:
    """Base of every event; ``kind`` names it in traces."""

    kind: str = attrs.field(init=False, default="event")

    def to_json(self) -> dict[str, Any]:
        return attrs.asdict(self, recurse=True)

    def describe(self) -> str | None:
        """One line of plain text for the live view; None keeps the event out of it."""
        return None

    @property
    def style(self) -> str:
        """The rich style of the live-view line (``"red"``, ``"dim"`` ...)."""
        return ""


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

    def describe(self) -> str:
        return (
            f"step {self.step} request: system {self.system_tokens:,} + tools {self.tools_tokens:,} "
            f"({len(self.tool_names)} tools) + messages {self.messages_tokens:,} = {self.total_tokens:,} tokens  "
            f"prefix {self.prefix_hash}"
        )

    @property
    def style(self) -> str:
        return "cyan"


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

    def describe(self) -> str | None:
        if self.tool_calls:
            return "\n".join(f"  model calls {c['name']} {short(c['arguments'])}" for c in self.tool_calls)
        return f"  answer: {self.text}" if self.text else None

    @property
    def style(self) -> str:
        return "" if self.tool_calls else "green"


@attrs.frozen
class ToolCallResolved(Event):
    kind: str = attrs.field(init=False, default="resolve")
    step: int = 0
    call_id: str = ""
    requested: str = ""
    resolved: str = ""

    def describe(self) -> str:
        return f"  resolved {self.requested} -> {self.resolved}"


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

    def describe(self) -> str:
        return f"  {'error' if self.is_error else 'ok'} {self.tool}: {short(self.content, 110)}"

    @property
    def style(self) -> str:
        return "red" if self.is_error else ""


@attrs.frozen
class GroupLoaded(Event):
    kind: str = attrs.field(init=False, default="group_load")
    step: int = 0
    group: str = ""
    tools: tuple[str, ...] = ()
    error: str | None = None

    def describe(self) -> str:
        return f"  group load {self.group}: {self.error or f'{len(self.tools)} tools'}"

    @property
    def style(self) -> str:
        return "red" if self.error else "magenta"


@attrs.frozen
class PluginError(Event):
    """A plugin's hook raised, named by plugin, distribution and hook."""

    kind: str = attrs.field(init=False, default="error")
    plugin: str = ""
    distribution: str = ""
    hook: str = ""
    message: str = ""
    step: int | None = None
    call_id: str | None = None
    """The tool call a per-call hook failed on (its call alone failed); None for a phase hook."""

    def describe(self) -> str:
        return f"plugin {self.plugin} failed in {self.hook}: {self.message}"

    @property
    def style(self) -> str:
        return "red"


@attrs.frozen
class PluginWarning(Event):
    """A plugin carried on without something it wanted (a store that is down, say)."""

    kind: str = attrs.field(init=False, default="warning")
    plugin: str = ""
    hook: str = ""
    message: str = ""

    def describe(self) -> str:
        return f"plugin {self.plugin} ({self.hook}): {self.message}"

    @property
    def style(self) -> str:
        return "yellow"


@attrs.frozen
class RunFinished(Event):
    kind: str = attrs.field(init=False, default="run_end")
    run_id: str = ""
    steps: int = 0
    stop_reason: str = ""
    input_tokens: int = 0
    output_tokens: int = 0
    cached_input_tokens: int = 0
    error: str | None = None
    failure: RunFailure | None = None
    """What ended the run when ``stop_reason`` is ``error``, as data."""


def short(value: Any, width: int = 90) -> str:
    """``value`` as one line of at most ``width`` characters."""
    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


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
