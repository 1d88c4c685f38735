"""The plugin ``read-result``: a result greenroom cuts is kept whole, and the model reads the
rest with the tool ``read_result``.

- Contributions: the tool ``read_result`` (65 tokens in every request: every word of its
  definition is paid on every step, so the note, not the definition, says how to call it).
- ResultCut (``greenroom_result_cut``): while ``read_result`` is a tool the run may call, a
  result over ``[agent] max_result_tokens`` is kept in the state folder (``kept``), a
  ``result_kept`` event says so, and the cut result's note ends saying how many lines it
  has, which are not shown and how to read them. A result too large to keep, or one the
  state folder refused, is only cut, and the note says why. ``read_result``'s own results
  are never kept (a read is bounded below the limit).
- What keeps them: a session's file (``RunContext.session_file`` when it keeps,
  ``greenroom_session_saved`` when it is saved later); what removes them: an MCP client's
  run ending (RunEnd of a ``CLIENT`` run) and the runtime closing (``RunContext.on_close``),
  for sessions never saved.

``[plugins] disable = ["read-result"]`` takes it away, and then nothing is kept: a cut
result's note says to ask the tool for less instead.
"""

from __future__ import annotations

import functools
import logging
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import anyio.to_thread
import attrs

from greenroom import (
    Event,
    Plugin,
    RunContext,
    RunKind,
    RunOutcome,
    Session,
    Tool,
    ToolCall,
    ToolCallContext,
    ToolDescriptor,
    ToolGroup,
    ToolResult,
    ToolSet,
    Truncation,
    hookimpl,
)
from greenroom_results.kept import KeptResult, KeptResults, NotKept, pin
from greenroom_results.reading import line_starts, read_result

log = logging.getLogger("greenroom")

NAME = "read_result"

DESCRIPTOR = ToolDescriptor(
    name=NAME,
    # the cut result's note gives the whole call (call_id, and offset and limit or pattern):
    # the definition, paid on every request, only has to say what the tool is for
    description="Read more of a result greenroom cut: its note says how.",
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


@attrs.frozen
class ReadResultConfig:
    """What the kept results may take in the state folder.

    Args:
        max_kept_bytes: Largest result kept whole when it is over ``[agent]
            max_result_tokens`` (read back with ``read_result``); a larger one is only cut.
        max_session_bytes: What one session keeps in all; past it its oldest kept
            results go first.
    """

    max_kept_bytes: int = attrs.field(default=16 * 1024 * 1024, validator=attrs.validators.ge(1))
    max_session_bytes: int = attrs.field(default=64 * 1024 * 1024, validator=attrs.validators.ge(1))


@attrs.frozen
class ResultKept(Event):
    """A cut result was kept whole, to be read back by the id of the call that made it."""

    kind: str = attrs.field(init=False, default="result_kept")
    step: int = 0
    call_id: str = ""
    tool: str = ""
    chars: int = 0
    bytes: int = 0

    def describe(self) -> str:
        return f"  kept {self.tool}'s whole result ({self.bytes:,} bytes) for {NAME}, call_id {self.call_id}"


class ReadResult:
    """The tool ``read_result``."""

    descriptor = DESCRIPTOR
    timeout: float | None = None

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext[RunContext]) -> ToolResult:
        if ctx.run is None:
            return ToolResult.error(f"{NAME} works only in a run of the runtime that contributed it")
        return await read_result(
            ctx.run,
            str(args["call_id"]),
            offset=args.get("offset"),
            limit=args.get("limit"),
            pattern=args.get("pattern"),
        )


class ReadResultPlugin(Plugin):
    """Offers the model ``read_result``, to read the results greenroom cut and kept whole."""

    name = "read-result"
    config_class = ReadResultConfig

    config: ReadResultConfig

    def __init__(self, config: ReadResultConfig | None = None) -> None:
        super().__init__(config)
        self.kept = KeptResults()
        """The kept results of the runtime's sessions (one instance per runtime)."""
        self._closes = False

    @hookimpl
    def greenroom_tools(self, tools: ToolSet, groups: Mapping[str, ToolGroup]) -> Iterable[Tool]:
        # always: the tools whose results it reads may come later (an MCP server listed at start)
        return [ReadResult()]

    @hookimpl
    async def greenroom_result_cut(self, ctx: RunContext, call: ToolCall, text: str, cut: Truncation) -> str | None:
        if call.name == NAME or not isinstance(ctx.tools.get(NAME), ReadResult):
            return None  # only a tool can read a kept result back: hidden or denied, nothing is kept
        if not self._closes:  # the sessions never saved lose theirs when the runtime closes
            self._closes = True
            ctx.on_close(self.kept.aclose)
        work = functools.partial(self._keep, ctx.session_id, ctx.session_file, call, text, cut)
        try:
            kept, sentence = await anyio.to_thread.run_sync(work)
        except NotKept as exc:
            return f"greenroom did not keep it whole ({exc.reason}). {cut.advice}"
        except OSError as exc:  # a full disk, a state folder it may not write: the cut goes on
            log.warning("could not keep the result of %s (%s): %s", call.id, call.name, exc)
            return f"greenroom did not keep it whole (it could not be written: {exc.strerror or exc}). {cut.advice}"
        ctx.emit(ResultKept(step=ctx.step, call_id=call.id, tool=call.name, chars=kept.chars, bytes=kept.bytes))
        return sentence

    def _keep(
        self, session_id: str, session_file: Path | None, call: ToolCall, text: str, cut: Truncation
    ) -> tuple[KeptResult, str]:
        kept = self.kept.keep(
            session_id,
            call.id,
            call.name,
            text,
            max_bytes=self.config.max_kept_bytes,
            session_bytes=self.config.max_session_bytes,
            session_file=session_file,
        )
        return kept, how_to_read(call.id, line_starts(text), cut)

    @hookimpl
    async def greenroom_run_end(self, ctx: RunContext, outcome: RunOutcome) -> None:
        if ctx.kind is RunKind.CLIENT:  # a gateway client's session ends with its run
            await self.kept.forget(ctx.session_id)

    @hookimpl
    def greenroom_session_saved(self, session: Session, path: Path) -> None:
        pin(session.id, path)  # its kept results stay as long as that file is there


def how_to_read(call_id: str, starts: list[int], cut: Truncation) -> str:
    """The note's last sentence: the lines the result has, those not shown, how to read them."""
    first = bisect_right(starts, cut.head_chars)  # the line the head ends in is not whole
    last = bisect_right(starts, max(cut.original_chars - cut.tail_chars - 1, 0))
    hidden = f"; lines {first:,} to {last:,} are not shown" if first <= last else ""
    return (
        f"greenroom kept the whole result ({len(starts):,} lines{hidden}): call {NAME} with call_id "
        f'"{call_id}" and offset (a line number) and limit, or with pattern (a regular expression) for the lines '
        "it matches."
    )
