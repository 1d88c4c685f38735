"""Model policies for the fault suite (``model = "scripted:fault_models.py:NAME"``): models
that act on what their request holds, so a test sees through the CLI what the model read."""

from __future__ import annotations

import json
from typing import Any

from greenroom import ModelRequest, count_tokens


def read_then_report(request: ModelRequest) -> dict[str, Any] | str:
    """Call the tool whose name ends in ``read_log``, then answer with what its result,
    as this request carries it, looks like: its size and its first two lines."""
    results = [m for m in request.messages if m.role == "tool"]
    if not results:
        name = next(t.name for t in request.tools if t.name.endswith("read_log"))
        return {"tool_calls": [{"name": name, "arguments": {}}]}
    read = results[-1].content
    return json.dumps(
        {
            "chars": len(read),
            "tokens": count_tokens(read),
            "is_error": results[-1].is_error,
            "head": read.split("\n", 2)[:2],
        }
    )
