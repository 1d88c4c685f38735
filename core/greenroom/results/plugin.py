"""The core plugin ``read-result``: the tool ``read_result``, with which the model reads what
greenroom kept of a result it cut.

It is a plugin, not part of the run, because it is what the model sees: a tool definition
in every request (about 90 tokens). ``[plugins] disable =
["read-result"]`` takes it away, and then nothing is kept: a cut result's note says to ask
the tool for less instead. It uses only the public surface (``RunContext.read_result``), as
any plugin could, and is registered by entry point like ``scripted``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from greenroom import (
    Plugin,
    RunContext,
    Tool,
    ToolCallContext,
    ToolDescriptor,
    ToolGroup,
    ToolResult,
    ToolSet,
    hookimpl,
)

NAME = "read_result"

DESCRIPTOR = ToolDescriptor(
    name=NAME,
    description=(
        "Read a result greenroom cut, by the call_id its note gives: lines from offset (from 1; limit of "
        "them), or those matching pattern (a regular expression)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "call_id": {"type": "string"},
            "offset": {"type": "integer"},
            "limit": {"type": "integer"},
            "pattern": {"type": "string"},
        },
        "required": ["call_id"],
    },
    deferrable="never",  # a cut result's note names it: the model calls it at once, never searches for it
)
"""About 90 tokens in a request: every word of it is paid on every step."""


class ReadResult:
    """``read_result``: a ``ResultReader`` (``greenroom.results.fitting``)."""

    descriptor = DESCRIPTOR
    timeout: float | None = None

    def how_to_read(self, call_id: str) -> str:
        return (
            f'call {NAME} with call_id "{call_id}" and offset (a line number) and limit, or with pattern (a '
            "regular expression) for the lines it matches"
        )

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext[RunContext]) -> ToolResult:
        if ctx.run is None:
            return ToolResult.error(f"{NAME} works only in a run of the runtime that contributed it")
        return await ctx.run.read_result(
            str(args["call_id"]), offset=args.get("offset"), limit=args.get("limit"), pattern=args.get("pattern")
        )


class ReadResultPlugin(Plugin):
    """Offers the model ``read_result``, to read the results greenroom cut and kept whole."""

    name = "read-result"
    nonblocking = True

    @hookimpl
    def greenroom_tools(self, tools: ToolSet, groups: Mapping[str, ToolGroup]) -> Iterable[Tool]:
        # always: the tools whose results it reads may come later (an MCP server listed at start)
        return [ReadResult()]
