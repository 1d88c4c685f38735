"""What ToolSearch tells the model: found schemas, a browse list, or why nothing matched."""

from __future__ import annotations

import heapq
import json
from collections.abc import Sequence
from typing import Any

from greenroom import SearchQuery, ToolDescriptor
from greenroom.kit import IdentityMemo
from greenroom_deferred.listing import first_line
from greenroom_deferred.signatures import format_signatures

_LINES: IdentityMemo[str] = IdentityMemo(1024, weak=True)
"""Each found tool's ``<function>`` line, by descriptor: a tool found again (a session
searches around the same tools) is not serialised again. Held weakly: a catalog
descriptor's schema holds its whole catalog, which must go with its runtime."""


def function_line(tool: ToolDescriptor) -> str:
    """``<function>{json}</function>`` for one tool; the JSON has sorted keys, so the same
    tool always renders to the same bytes."""
    hit = _LINES.lookup((tool,))
    if hit is not None:
        return hit[0]
    line = f"<function>{json.dumps(tool.to_json(), sort_keys=True, ensure_ascii=False)}</function>"
    return _LINES.put((tool,), line)


def format_functions(tools: Sequence[ToolDescriptor]) -> str:
    """``<functions>`` with one ``function_line`` per tool."""
    return "\n".join(["<functions>", *map(function_line, tools), "</functions>"])


def found(
    matched: Sequence[ToolDescriptor], missing: Sequence[str], call_hint: str, scripts: str | None = None
) -> tuple[str, str]:
    """The schemas found, the ``select:`` names that were not, and how to call them; and
    that answer's words beside the schemas (``missing`` and the hint), for ``structured``.
    With ``scripts`` (the tool that runs the model's scripts), each tool is its signature
    as a script calls it instead of its schema (``signatures``)."""
    parts = []
    if missing:
        parts.append(f"Not found: {', '.join(missing)}.")
    parts.append(call_hint)
    if scripts:
        parts.append(f"In {scripts}, call them as shown: await tools.NAME(args).")
    rest = "\n".join(parts)
    block = format_signatures(matched) if scripts else format_functions(matched)
    return f"{block}\n{rest}", rest


def structured(text: str, tools: Sequence[ToolDescriptor] = ()) -> dict[str, Any]:
    """An answer's facts as structured content: the definitions found (as in the text's
    ``<function>`` lines) and the words beside them. A client that shows its model only
    this part (pydantic-ai, fastmcp's ``.data``) gives it what the text says."""
    return {"tools": [tool.to_json() for tool in tools], "message": text}


def browse(deferred: Sequence[ToolDescriptor], limit: int) -> tuple[list[ToolDescriptor], str]:
    """An empty query: the first ``limit`` deferred tools (by group, then name), and the
    answer that says how many there are and lists those."""
    # the first few in order, without sorting a catalog of any size
    shown = heapq.nsmallest(limit, deferred, key=lambda d: ((d.group or ""), d.name))
    lines = [f"{len(deferred)} deferred tools. Search with keywords to load schemas."]
    lines += [f"{d.name} - {first_line(d.description, 80)}" for d in shown]
    if len(deferred) > len(shown):
        lines.append(f"... and {len(deferred) - len(shown)} more.")
    return shown, "\n".join(lines)


NOTHING_DEFERRED = (
    "There are no deferred tools to search; every tool you can use is already in your tool list. "
    "Call one of those directly."
)
"""The answer to a keyword or browse search when no tool is deferred."""


def no_match(query: SearchQuery, deferred: Sequence[ToolDescriptor], missing: Sequence[str], limit: int) -> str:
    """Nothing matched: say what was asked and name what there is, so the model can refine."""
    what = f"select {', '.join(missing)}" if query.mode == "select" else repr(query.text)
    shown = heapq.nsmallest(limit, (d.name for d in deferred))
    if not shown:  # a ``select:`` of names that are nowhere, with nothing deferred
        return f"No tools matched {what}. No tool is deferred: every tool you can use is in your tool list."
    more = f" ... and {len(deferred) - len(shown)} more" if len(deferred) > len(shown) else ""
    return f"No tools matched {what}. Available deferred tools: {', '.join(shown)}{more}. Refine the query."


def group_names(label: str, members: Sequence[ToolDescriptor], limit: int) -> str:
    """``group:NAME``: the group's tools by name with their first lines (no schemas), at
    most ``limit`` of them."""
    shown = members[:limit]
    lines = [f"Group {label}: {len(members)} tools. Get schemas with select:NAME,NAME or keywords."]
    lines += [f"{d.name} - {first_line(d.description, 80)}" for d in shown]
    if len(members) > len(shown):
        lines.append(f"... and {len(members) - len(shown)} more; search with keywords to narrow down.")
    return "\n".join(lines)


def unknown_group(wanted: str, groups: Sequence[str], domains: Sequence[str], limit: int = 60) -> str:
    """``group:NAME`` named no group: say which there are (at most ``limit`` of each)."""
    known = [*groups[:limit], *domains[:limit]]
    more = len(groups) + len(domains) - len(known)
    tail = f" ... and {more} more" if more > 0 else ""
    if not known:
        return f"There is no group {wanted!r}, and no deferred tool is in a group: search with keywords."
    return f"There is no group {wanted!r}. Groups: {', '.join(known)}{tail}."
