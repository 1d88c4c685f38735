"""The way a result takes to the model: compacted (``compaction``), then, over ``[agent]
max_result_tokens``, kept whole (``kept``) and cut to its head and tail
(``greenroom.run.limits``) with a note whose last sentence says how to read the rest.

Only a tool can read a kept result back, so a result is kept only when a tool that reads
them (a ``ResultReader``: ``read_result``, of the core plugin ``read-result``) is one the
run may call; the note then says how to call it. Without one, or for a result too large to
keep, the note says to ask the tool for less, as it always did, and says why nothing was
kept. A reader's own results are never kept (a read is bounded below the limit anyway).
Work that grows with the result (parsing JSON, keeping it, cutting it) runs in a worker
thread, never on the event loop.
"""

from __future__ import annotations

import functools
import logging
from bisect import bisect_right
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import anyio.to_thread
import attrs

from greenroom._support.globs import matches_any
from greenroom.config import ResultsConfig
from greenroom.results.compaction import compact_text, looks_like_json
from greenroom.results.kept import KeptResult, KeptResults, NotKept
from greenroom.results.reading import line_starts
from greenroom.run.limits import ADVICE, Truncation, bound_result
from greenroom.tokens.counting import count_tokens_upto, surely_within
from greenroom.tools import Tool, ToolDescriptor, ToolResult

if TYPE_CHECKING:
    from greenroom.models import ToolCall
    from greenroom.run.parts import Parts
    from greenroom.run.session import Session

log = logging.getLogger("greenroom")

_INLINE_CHARS = 32_768
"""A result up to this long is compacted on the event loop (it takes microseconds)."""


@runtime_checkable
class ResultReader(Protocol):
    """A tool that reads kept results back (with ``RunContext.read_result``). When one is
    among the tools a run may call, a result over the limit is kept, and its note ends
    with the reader's ``how_to_read``: a sentence (no final full stop) telling the model
    how to read the result ``call_id`` made."""

    @property
    def descriptor(self) -> ToolDescriptor: ...

    def how_to_read(self, call_id: str) -> str: ...


async def compacted(result: ToolResult, tool: str, settings: ResultsConfig) -> ToolResult:
    """``result`` with its JSON text compacted, unless ``settings`` says not to for ``tool``.
    Its structured content stays as it was; the source's own blocks give way to the text."""
    text = result.content
    if not settings.compact or result.parts or not looks_like_json(text) or matches_any(settings.verbatim, tool):
        return result
    if len(text) <= _INLINE_CHARS:
        lean = compact_text(text)
    else:
        lean = await anyio.to_thread.run_sync(compact_text, text)
    return result if lean is None else attrs.evolve(result, content=lean, blocks=None)


async def fit(
    parts: Parts, session: Session, tools: Mapping[str, Tool], call: ToolCall, result: ToolResult, limit: int
) -> tuple[ToolResult, Truncation | None, KeptResult | None]:
    """``result`` within ``limit`` tokens; when it was cut, the cut and what was kept.
    ``tools`` are those the run may call (a reader among them is what keeping needs)."""
    text = result.content
    if surely_within(text, limit) or count_tokens_upto(text, limit) is not None:
        return result, None, None
    reader = _reader(parts, tools, call.name)
    work = functools.partial(
        _keep_and_cut, parts.kept, parts.results, session.id, session.file, call.id, call.name, result, limit, reader
    )
    return await anyio.to_thread.run_sync(work)


def _reader(parts: Parts, tools: Mapping[str, Tool], tool: str) -> ResultReader | None:
    """A plugin's tool the run may call that reads kept results (never for a reader's own
    result: a read is bounded below the limit)."""
    readers = [t for n in sorted(parts.plugin_tool_names) if n in tools and isinstance(t := tools[n], ResultReader)]
    return None if any(r.descriptor.name == tool for r in readers) else next(iter(readers), None)


def _keep_and_cut(
    store: KeptResults,
    settings: ResultsConfig,
    session_id: str,
    session_file: Path | None,
    call_id: str,
    tool: str,
    result: ToolResult,
    limit: int,
    reader: ResultReader | None,
) -> tuple[ToolResult, Truncation | None, KeptResult | None]:
    if reader is None:
        return (*bound_result(result, limit), None)
    try:
        kept = store.keep(
            session_id,
            call_id,
            tool,
            result.content,
            max_bytes=settings.max_kept_bytes,
            session_bytes=settings.max_session_bytes,
            session_file=session_file,
        )
    except NotKept as exc:
        why = exc.reason
    except OSError as exc:  # a full disk, a state folder it may not write: the cut goes on
        log.warning("could not keep the result of %s (%s): %s", call_id, tool, exc)
        why = f"it could not be written: {exc.strerror or exc}"
    else:
        starts = line_starts(result.content)
        bounded, cut = bound_result(result, limit, functools.partial(_how_to_read, reader, call_id, starts))
        return bounded, cut, kept
    bounded, cut = bound_result(result, limit, lambda _: f"greenroom did not keep it whole ({why}). {ADVICE}")
    return bounded, cut, None


def _how_to_read(reader: ResultReader, call_id: str, starts: list[int], cut: Truncation) -> str:
    first = bisect_right(starts, cut.head_chars)  # the line the head ends in is not whole
    last = bisect_right(starts, max(cut.original_chars - cut.tail_chars - 1, 0))
    hidden = f"; lines {first:,} to {last:,} are not shown" if first <= last else ""
    return f"greenroom kept the whole result ({len(starts):,} lines{hidden}): {reader.how_to_read(call_id)}."
