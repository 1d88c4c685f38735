"""The gateway's logs: plain text (Python's default, warnings and errors only), or one JSON
object per line on stderr (``--log-format json``) with a line per client request (written
by ``requests``).

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
from datetime import datetime, timezone
from typing import Any

from greenroom.kit import redact_known

LOG_FORMATS = ("text", "json")
FIELDS = ("method", "tool", "caller", "duration_ms", "outcome")
"""What a line about a request carries beside the message, when known."""


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


__all__ = ["FIELDS", "LOG_FORMATS", "JsonFormatter", "configure"]
