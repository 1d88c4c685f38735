"""What each hook's answer must look like: an answer of the wrong shape is the failure of
the implementation that gave it, named like a raise (plugin, distribution, hook).

A hook that guards access fails closed this way: ``greenroom_hidden_tools`` answering
something that is not a collection of names ends the run (nothing runs without its
scope), and a gate answering something that is not a ``Decision`` fails its call. Answers
are checked where they are made, in the implementation's own wrapper, so pluggy's
firstresult and wrappers see only well-formed answers.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Mapping
from typing import Any


def _names(answer: Any) -> Any:
    if isinstance(answer, (str, bytes)) or not isinstance(answer, Iterable):
        raise _wrong(answer, "an iterable of tool names (a list or set of str)")
    names = list(answer)
    if not all(isinstance(n, str) for n in names):
        bad = next(n for n in names if not isinstance(n, str))
        raise _wrong(bad, "tool names as str", what="an item")
    return names


def _of(type_name: str, module: str) -> Callable[[Any], Any]:
    def check(answer: Any) -> Any:
        cls = _resolve(module, type_name)
        if not isinstance(answer, cls):
            raise _wrong(answer, f"a {type_name} or None")
        return answer

    return check


def _tools(answer: Any) -> Any:
    from greenroom.tools.base import Tool

    if isinstance(answer, (str, bytes, Mapping)) or not isinstance(answer, Iterable):
        raise _wrong(answer, "an iterable of Tool objects")
    tools = list(answer)
    for t in tools:
        if not isinstance(t, Tool):
            raise _wrong(t, "Tool objects", what="an item")
    return tools


def _scored(answer: Any) -> Any:
    from greenroom.search import ScoredTool

    if not isinstance(answer, list) or not all(isinstance(s, ScoredTool) for s in answer):
        raise _wrong(answer, "a list of ScoredTool or None")
    return answer


def _text(answer: Any) -> Any:
    if not isinstance(answer, str):
        raise _wrong(answer, "a str or None")
    return answer


def _mapping(answer: Any) -> Any:
    if not isinstance(answer, Mapping):
        raise _wrong(answer, "a mapping or None")
    return answer


@functools.cache
def _resolve(module: str, name: str) -> type:
    import importlib

    return getattr(importlib.import_module(module), name)  # type: ignore[no-any-return]


def _wrong(answer: Any, expected: str, *, what: str = "an answer") -> TypeError:
    shown = repr(answer)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    return TypeError(f"returned {what} of type {type(answer).__name__} ({shown}); expected {expected}")


CHECKS: dict[str, Callable[[Any], Any]] = {
    "greenroom_hidden_tools": _names,
    "greenroom_before_tool_execute": _of("Decision", "greenroom.run.context"),
    "greenroom_resolve_tool_call": _of("ToolCall", "greenroom.models"),
    "greenroom_result_cut": _text,
    "greenroom_rank_tools": _of("Ranking", "greenroom.search"),
    "greenroom_search_tools": _scored,
    "greenroom_tools": _tools,
    "greenroom_model_providers": _mapping,
    "greenroom_inspect_tools": _mapping,
}
"""Hook name -> the check of a non-None answer (None always means "no answer")."""


def check_answer(hook: str, answer: Any) -> Any:
    """``answer`` if it has the shape ``hook`` takes (None always does); else a TypeError
    saying what came back and what was expected."""
    if answer is None:
        return None
    check = CHECKS.get(hook)
    return answer if check is None else check(answer)


__all__ = ["CHECKS", "check_answer"]
