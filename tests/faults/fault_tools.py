"""The tools the fault suite's agents carry (``fault_tools.py:TOOLS`` in their config): one
that answers, one that floods, one that raises, two that exit (argparse in a worker
thread, ``sys.exit`` on the event loop), one that raises ``GeneratorExit`` in a worker
thread, one that never returns, one whose result cannot be rendered, one that lists a
file whose name is not UTF-8 and one that takes any document; and in ``BROKEN``, for the
agents that carry them, three whose parameter schemas are invalid, one kind of fault each."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import anyio

from greenroom import FunctionTool, ToolDescriptor, tool

LOG_FIRST_LINE = "2024-05-01T00:00:00Z INFO boot: the first line of the log"
LOG_LAST_LINE = "2024-05-01T23:59:59Z INFO shutdown: the last line of the log"
LOG_LINES = 16_000  # about 1 MB: past the 1,000,000 characters the token encoder refuses at once

# one invalid schema per fault the loader finds, each with the one key that breaks it
BAD_SCHEMAS: dict[str, dict[str, Any]] = {
    "bad_type": {"type": "object", "properties": {"q": {"type": "strng"}}},
    "bad_regex": {"type": "object", "properties": {"q": {"type": "string", "pattern": "[a-"}}},
    "bad_ref": {"type": "object", "properties": {"q": {"$ref": "#/$defs/Query"}}},
}


def log_text() -> str:
    """A day of a service's log, the kind of text a real tool floods a model with."""
    body = (
        f"2024-05-01T12:{i // 60 % 60:02d}:{i % 60:02d}Z INFO checkout: request {i} served in 41 ms"
        for i in range(LOG_LINES)
    )
    return "\n".join([LOG_FIRST_LINE, *body, LOG_LAST_LINE]) + "\n"


@tool
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool
def read_log(lines: int = 0) -> str:
    """Read the whole service log.

    Args:
        lines: Ignored: the log comes whole, as careless tools send it.
    """
    return log_text()


@tool
def explode() -> str:
    """Fail, as a tool with a bug does."""
    raise RuntimeError("the disk is on fire")


@tool
async def wait_forever() -> str:
    """Say it started (in the file ``GR_MARKER`` names, if any), then wait for an event that never fires."""
    marker = os.environ.get("GR_MARKER")
    if marker:
        Path(marker).write_text("started")
    await anyio.Event().wait()
    return "never"


@tool
def run_report(args: str) -> str:
    """Run the report command line, as a tool wrapping a CLI does.

    Args:
        args: Its arguments.
    """
    parser = argparse.ArgumentParser(prog="report")
    parser.add_argument("--days", type=int, required=True)
    return str(parser.parse_args(args.split()).days)  # SystemExit(2) on arguments it does not take


@tool
async def shut_down() -> str:
    """Stop, the way a script does."""
    sys.exit("shutting down")


@tool
def stop_stream() -> str:
    """Stop reading a stream the way a closed generator does (in a worker thread)."""
    raise GeneratorExit("the stream was closed")


class Unprintable:
    """A value neither JSON nor ``str`` can render: greenroom fails on it, not the tool."""

    def __str__(self) -> str:
        raise RuntimeError("__str__ of a value nobody can print")

    __repr__ = __str__


@tool
def garble() -> Any:
    """Return something that cannot be shown."""
    return Unprintable()


@tool
def list_reports() -> str:
    """List the report files, named as the disk names them."""
    return os.fsdecode(b"report-\xe9.txt")  # a Latin-1 name: Python hands it over with a lone surrogate


@tool
def store(data: dict) -> str:  # type: ignore[type-arg]
    """Store a document.

    Args:
        data: The document.
    """
    return "stored"


def _never_runs(**arguments: Any) -> str:
    raise AssertionError("a tool whose schema is invalid must never run")


BROKEN = [FunctionTool(_never_runs, ToolDescriptor(n, f"The {n} tool.", s)) for n, s in BAD_SCHEMAS.items()]

TOOLS = [ping, read_log, explode, run_report, shut_down, stop_stream, wait_forever, garble, list_reports, store]
