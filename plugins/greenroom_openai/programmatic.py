"""Programmatic tool calling on the Responses API: the model writes JavaScript that OpenAI
runs in a fresh V8 runtime of its own, and that program calls the tools of
``ModelRequest.programmatic``; greenroom answers each of those calls like any other.

On the wire (as the SDK's types have it): ``{"type": "programmatic_tool_calling"}`` among
the tools, and ``allowed_callers: ["direct", "programmatic"]`` on each function the program
may call. The response holds the program (a ``program`` item: ``id``, ``call_id``,
``code`` and an opaque ``fingerprint`` that must be sent back), its calls (``function_call``
items whose ``caller`` is ``{"type": "program", "caller_id": <the program's call_id>}``)
and, once it has run, its ``program_output``. Such a turn is kept whole and replayed in
order (the ``program`` and ``program_output`` items with their ids and statuses, which
their input forms require); each call's ``function_call_output`` names the same
``caller``, so the program resumes with the results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

PROGRAMMATIC_TOOL: dict[str, str] = {"type": "programmatic_tool_calling"}
ALLOWED_CALLERS = ("direct", "programmatic")

ITEMS = frozenset({"program", "program_output"})
"""Item types of the model's program: a turn with one is kept whole; replayed as they came."""


def from_program(item: Mapping[str, Any]) -> bool:
    """Whether a ``function_call`` item is a call the model's program made."""
    caller = item.get("caller")
    return isinstance(caller, Mapping) and caller.get("type") == "program"


def callers(items: Sequence[Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The ``caller`` of each call a kept turn's program made, by call id."""
    return {
        str(i.get("call_id")): dict(i["caller"]) for i in items if i.get("type") == "function_call" and from_program(i)
    }


__all__ = ["ALLOWED_CALLERS", "ITEMS", "PROGRAMMATIC_TOOL", "callers", "from_program"]
