"""The way a result takes to the model: compacted (``compaction``), then, over ``[agent]
max_result_tokens``, cut to its head and tail (``greenroom.run.limits``) with a note whose
last sentence says how to read more.

Once it is cut, ``greenroom_result_cut`` lets a plugin keep the whole text and say how the
model reads the rest: the first answer is the note's last sentence. Without one, when that
hook fails (a ``PluginError`` event names the plugin), or when the sentence does not fit
the room the note has, the note says to ask the tool for less. Work that grows with the
result (parsing JSON, cutting it) runs in a worker thread, never on the event loop.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

import anyio.to_thread
import attrs

from greenroom import events as ev
from greenroom._support.globs import matches_any
from greenroom.config import ResultsConfig
from greenroom.failures import PluginHookError
from greenroom.results.compaction import compact_text, looks_like_json
from greenroom.run.limits import Truncation, bound_result, rendered
from greenroom.tokens.counting import count_tokens_upto, surely_within
from greenroom.tools import ToolResult

if TYPE_CHECKING:
    from greenroom.models import ToolCall
    from greenroom.plugins.host import PluginHost
    from greenroom.run.context import RunContext

log = logging.getLogger("greenroom")

_INLINE_CHARS = 32_768
"""A result up to this long is compacted on the event loop (it takes microseconds)."""

HOOK = "greenroom_result_cut"


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
    host: PluginHost, ctx: RunContext, call: ToolCall, result: ToolResult, limit: int
) -> tuple[ToolResult, Truncation | None]:
    """``result`` within ``limit`` tokens, and the cut when it was cut (its ``advice`` a
    plugin's, when one answered and its sentence fits)."""
    text = result.content
    if surely_within(text, limit) or count_tokens_upto(text, limit) is not None:
        return result, None
    bounded, cut = await anyio.to_thread.run_sync(bound_result, result, limit)
    if cut is None or not cut.advice or not host.has_impls(HOOK):  # no note (a tiny limit): nothing to say
        return bounded, cut
    try:
        advice = await host.call(HOOK, ctx=ctx, call=call, text=text, cut=cut)
    except PluginHookError as exc:  # the result goes out cut, with the plain note
        log.debug("%s", exc, exc_info=exc.error)
        ctx.emit(ev.PluginError.of(exc, ctx.step, call.id))
        return bounded, cut
    if not advice:
        return bounded, cut
    told = attrs.evolve(cut, advice=advice)
    content = await anyio.to_thread.run_sync(rendered, text, told)
    if content is None:  # a sentence too long for the room the note has: the plain note
        return bounded, cut
    return ToolResult(content=content, is_error=result.is_error), told
