"""What ToolSearch tells the model: found schemas, a browse list, or why nothing matched."""

from __future__ import annotations

import json
from collections.abc import Sequence

from greenroom import SearchQuery, ToolDescriptor
from greenroom_deferred.listing import first_line


def format_functions(tools: Sequence[ToolDescriptor]) -> str:
    """``<functions>`` with one ``<function>{json}</function>`` line per tool; the JSON has
    sorted keys, so the same tool always renders to the same bytes."""
    lines = ["<functions>"]
    lines += [f"<function>{json.dumps(t.to_json(), sort_keys=True, ensure_ascii=False)}</function>" for t in tools]
    lines.append("</functions>")
    return "\n".join(lines)


def found(matched: Sequence[ToolDescriptor], missing: Sequence[str], call_hint: str) -> str:
    """The schemas found, the ``select:`` names that were not, and how to call them."""
    parts = [format_functions(matched)]
    if missing:
        parts.append(f"Not found: {', '.join(missing)}.")
    parts.append(call_hint)
    return "\n".join(parts)


def browse_order(deferred: Sequence[ToolDescriptor]) -> list[ToolDescriptor]:
    return sorted(deferred, key=lambda d: ((d.group or ""), d.name))


def browse(deferred: Sequence[ToolDescriptor], limit: int) -> str:
    """An empty query: how many tools are deferred, and the first ``limit`` of them."""
    names = browse_order(deferred)
    shown = names[:limit]
    lines = [f"{len(deferred)} deferred tools. Search with keywords to load schemas."]
    lines += [f"{d.name} - {first_line(d.description, 80)}" for d in shown]
    if len(names) > len(shown):
        lines.append(f"... and {len(names) - len(shown)} more.")
    return "\n".join(lines)


def no_match(query: SearchQuery, deferred: Sequence[ToolDescriptor], missing: Sequence[str], limit: int) -> str:
    """Nothing matched: say what was asked and name what there is, so the model can refine."""
    names = sorted(d.name for d in deferred)
    what = f"select {', '.join(missing)}" if query.mode == "select" else repr(query.text)
    shown = names[:limit]
    more = f" ... and {len(names) - len(shown)} more" if len(names) > len(shown) else ""
    return f"No tools matched {what}. Available deferred tools: {', '.join(shown)}{more}. Refine the query."
