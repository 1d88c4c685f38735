"""The in-process event bus and the JSONL trace writer."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO

from greenroom.events.kinds import Event

Listener = Callable[[Event], None]


class EventBus:
    """Delivers each event to every listener, in the order they subscribed."""

    def __init__(self) -> None:
        self._listeners: list[Listener] = []
        self.redact: Callable[[Event], Event] | None = None
        """Applied to each event before any listener sees it (the runtime masks its secrets)."""

    def subscribe(self, listener: Listener) -> Callable[[], None]:
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener)

    def emit(self, event: Event) -> None:
        if self.redact is not None:
            event = self.redact(event)
        for listener in list(self._listeners):
            listener(event)


class TraceWriter:
    """Writes one JSON object per event to a file, flushed line by line.

    A new trace file is readable by its owner only (0600): it holds the conversation and
    every tool's output. An existing file is appended to and keeps the mode it has.
    """

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        self._fh: IO[bytes] = os.fdopen(fd, "ab")

    def __call__(self, event: Event) -> None:
        record = {"ts": round(time.time(), 6), **event.to_json()}
        try:
            line = json.dumps(record, ensure_ascii=False, default=str).encode("utf-8")
        except UnicodeEncodeError:
            # a lone surrogate (a file name that was not UTF-8, say) cannot be UTF-8: escape it,
            # which JSON reads back to the same string
            line = json.dumps(record, ensure_ascii=True, default=str).encode("ascii")
        self._fh.write(line + b"\n")
        self._fh.flush()

    def close(self) -> None:
        self._fh.close()
