"""The API's limit on function declarations: at most 512 in one request.

A request with more tools than that is refused outright, so the provider sends only
512 of them and says how many it left out, once per session (a ``warning`` event of
the run, or a log line for a model called outside a run). Which ones go:

- tools no plugin placed (a deferring plugin's own tools, such as its search tool, which
  is how the model reaches everything else) stay, as long as they fit;
- among the placed tools, those with the highest learned priority stay: the use
  probability the agent's priors give each (``ToolPriors``), ties kept in request
  order. Without a run there are no priors: the first ones stay.

The placements and priors are those of the run whose model call is under way
(``greenroom.current_run()``); the placements come from the plugins' answers to
``greenroom_inspect_tools``. The choice is kept for the session while its tools stay
the same, so the tools array is the same bytes on every step and the prompt cache keeps
its prefix.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import Any

from greenroom import PluginWarning, RunContext, ToolDescriptor, ToolPlacement, current_run

MAX_DECLARATIONS = 512
"""The most function declarations Gemini takes in one request."""

KEPT_CHOICES = 64
"""Choices kept (one per session and tool set); the oldest go first."""

log = logging.getLogger("greenroom.providers")


class DeclarationLimit:
    """Keeps a request's tools within ``limit`` (module docstring); one per model."""

    def __init__(self, limit: int = MAX_DECLARATIONS, plugin: str = "gemini") -> None:
        self.limit = limit
        self.plugin = plugin
        self._chosen: dict[tuple[str, tuple[str, ...]], frozenset[str]] = {}

    def apply(self, tools: Sequence[ToolDescriptor], model: str) -> Sequence[ToolDescriptor]:
        """``tools``, or the ``limit`` of them that stay, in their order."""
        if len(tools) <= self.limit:
            return tools
        ctx = current_run()
        key = (ctx.session_id if ctx is not None else "", tuple(t.name for t in tools))
        kept = self._chosen.get(key)
        if kept is None:
            kept = choose(tools, self.limit, ctx)
            if len(self._chosen) >= KEPT_CHOICES:
                del self._chosen[next(iter(self._chosen))]
            self._chosen[key] = kept
            self._warn(ctx, model, len(tools) - len(kept), len(tools))
        return [t for t in tools if t.name in kept]

    def _warn(self, ctx: RunContext | None, model: str, left_out: int, offered: int) -> None:
        how = "the highest learned priority" if ctx is not None else "the first in request order"
        message = (
            f"{left_out} of {offered} tools left out of the request to {model}: Gemini takes at most "
            f"{self.limit} function declarations; kept the {self.limit} with {how}"
        )
        if ctx is None:
            log.warning("%s", message)
        else:
            ctx.emit(PluginWarning(plugin=self.plugin, hook="model call", message=message))


def choose(tools: Sequence[ToolDescriptor], limit: int, ctx: RunContext | None) -> frozenset[str]:
    """The names of the ``limit`` tools that stay (module docstring)."""
    placed = placements(ctx) if ctx is not None else {}
    kept = [t.name for t in tools if placed and t.name not in placed]
    if len(kept) > limit:  # nothing placed would fit beside them: all are ranked alike
        kept = []
    ranked = [(i, t.name) for i, t in enumerate(tools) if t.name not in kept]
    if ctx is not None:
        priors = ctx.priors
        ranked.sort(key=lambda item: (-priors.get(item[1]), item[0]))
    kept += [name for _, name in ranked[: limit - len(kept)]]
    return frozenset(kept)


def placements(ctx: RunContext) -> Mapping[str, ToolPlacement]:
    """How the plugins placed each tool (the first answer for a tool wins); none when a
    plugin cannot say (its failure leaves every tool ranked alike)."""
    try:
        answers: list[Any] = ctx.call_hook("greenroom_inspect_tools", ctx=ctx)
    except Exception as exc:  # explaining placements must not stop a model call
        log.debug("greenroom_inspect_tools failed while trimming tools: %s", exc)
        return {}
    merged: dict[str, ToolPlacement] = {}
    for answer in answers:
        if isinstance(answer, Mapping):
            for name, placement in answer.items():
                merged.setdefault(name, placement)
    return merged


__all__ = ["MAX_DECLARATIONS", "DeclarationLimit", "choose"]
