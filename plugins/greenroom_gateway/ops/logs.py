"""The gateway's logs: plain text (Python's default, warnings and errors only), or one JSON
object per line on stderr (``--log-format json``) with a line per client request.

A JSON line has ``time`` (UTC, ISO 8601), ``level``, ``logger`` and ``message``, and what
the request it is about carries where known: ``method``, ``tool``, ``caller`` (who the
gateway counts the call against), ``duration_ms`` and ``outcome`` (``ok``, ``error`` for
an error result, ``refused`` at a limit, ``failed`` for an error response, ``cancelled``).
Every secret the process knows is masked in the message, as in every other output.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import datetime, timezone
from typing import Any

import anyio
import attrs

from greenroom.kit import redact_known

LOG_FORMATS = ("text", "json")
FIELDS = ("method", "tool", "caller", "duration_ms", "outcome")
"""What a line about a request carries beside the message, when known."""

requests_log = logging.getLogger("greenroom.serve.requests")


class JsonFormatter(logging.Formatter):
    """A record as one JSON object on one line."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = datetime.fromtimestamp(record.created, timezone.utc).isoformat(timespec="milliseconds")
        out: dict[str, Any] = {
            "time": stamp.replace("+00:00", "Z"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": redact_known(record.getMessage()),
        }
        for field in FIELDS:
            value = getattr(record, field, None)
            if value is not None:
                out[field] = value
        if record.exc_info:
            out["error"] = redact_known(self.formatException(record.exc_info))
        return json.dumps(out, ensure_ascii=False, default=str)


def configure(log_format: str) -> logging.Handler | None:
    """Set the process's logs up for ``log_format``; the handler added (None for text,
    which leaves Python's default as it was: warnings and errors, as plain lines)."""
    if log_format not in LOG_FORMATS:
        raise ValueError(f"the log format is 'text' or 'json', not {log_format!r}")
    if log_format == "text":
        return None
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.addHandler(handler)
    if root.level == logging.NOTSET or root.level > logging.WARNING:
        root.setLevel(logging.WARNING)  # libraries: what goes wrong
    logging.getLogger("greenroom").setLevel(logging.INFO)  # the gateway: each request too
    logging.captureWarnings(True)  # Python's warnings too, as lines of their own
    return handler


@attrs.define
class RequestLog:
    """What one request's line will say; filled in as the request is answered."""

    method: str
    tool: str | None = None
    caller: str | None = None
    outcome: str = "ok"
    started: float = attrs.field(factory=time.perf_counter)


_current: ContextVar[RequestLog | None] = ContextVar("greenroom_serve_request_log", default=None)


def note_caller(key: str) -> None:
    """Say who the request being answered is from (its line carries it)."""
    entry = _current.get()
    if entry is not None:
        entry.caller = key


@contextmanager
def logged(method: str, tool: str | None = None) -> Iterator[RequestLog]:
    """Around answering one request: its line, once answered, when the log takes it."""
    entry = RequestLog(method, tool)
    token = _current.set(entry)
    try:
        yield entry
    except anyio.get_cancelled_exc_class():
        entry.outcome = "cancelled"
        raise
    except BaseException:
        entry.outcome = "failed"
        raise
    finally:
        _current.reset(token)
        if requests_log.isEnabledFor(logging.INFO):
            _emit(entry)


def _emit(entry: RequestLog) -> None:
    ms = round((time.perf_counter() - entry.started) * 1000, 3)
    what = f"{entry.method} {entry.tool}" if entry.tool else entry.method
    fields: dict[str, Any] = {"method": entry.method, "tool": entry.tool, "caller": entry.caller}
    fields.update(duration_ms=ms, outcome=entry.outcome)
    requests_log.info("%s: %s in %.1f ms", what, entry.outcome, ms, extra=fields)


__all__ = ["FIELDS", "LOG_FORMATS", "JsonFormatter", "RequestLog", "configure", "logged", "note_caller"]
