"""What ToolSearch tells the model: found schemas, a browse list, or why nothing matched."""

from __future__ import annotations

import heapq
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from greenroom import SearchQuery, ToolDescriptor
from greenroom.kit import IdentityMemo, descriptor_costs, tool_text
from greenroom_deferred.listing import SEARCH_TOOL as _SEARCH
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
    matched: Sequence[ToolDescriptor],
    missing: Sequence[str],
    call_hint: str,
    notes: Sequence[str] = (),
    scripts: str | None = None,
) -> tuple[str, str]:
    """The schemas found, the ``select:`` names that were not, what else the answer says
    (``notes``) and how to call them; and that answer's words beside the schemas, for
    ``structured``. With ``scripts`` (the tool that runs the model's scripts), each tool
    is its signature as a script calls it instead of its schema (``signatures``)."""
    parts = list(notes)
    if missing:
        parts.append(f"Not found: {', '.join(missing)}.")
    if matched:
        parts.append(call_hint)
        if scripts:
            parts.append(f"In {scripts}, call them as shown: await tools.NAME(args).")
    rest = "\n".join(parts)
    if not matched:
        return rest, rest
    block = format_signatures(matched) if scripts else format_functions(matched)
    return f"{block}\n{rest}", rest


def available(names: Iterable[str]) -> str:
    """Matching tools the model has in its tool list already (their schemas are there)."""
    return f"Already available (in your tool list, call directly): {', '.join(names)}."


def more(rest: Sequence[ToolDescriptor]) -> str:
    """Matches whose schemas did not fit the answer's budget."""
    names = ", ".join(d.name for d in rest)
    return f"More matches (get their schemas with select:{','.join(d.name for d in rest)}): {names}."


def within(tools: Sequence[ToolDescriptor], budget: int) -> tuple[list[ToolDescriptor], list[ToolDescriptor]]:
    """The tools whose schemas fit ``budget`` tokens in rank order (the first always; 0:
    no limit), and the rest."""
    if not budget or len(tools) <= 1:
        return list(tools), []
    sizes = descriptor_costs(tools, "definition_tokens")
    spent = sizes[0]
    for i in range(1, len(tools)):
        spent += sizes[i]
        if spent > budget:
            return list(tools[:i]), list(tools[i:])
    return list(tools), []


_STOP = frozenset(
    "a about all an and any are can could for from get give have how i in into is it its me my need of on or "
    "please show some tell than that the their them then there this to use want what when which who will with "
    "would you your".split()
)
CONFIDENT_WORDS = 2
"""A match is confident when the best tool's name or description holds at least this many
of the query's content words (all of them when it has fewer). Measured on 300 queries of
each labelled dataset with the default ranking, full requests and keyword forms: 74-84% of
the searches it flags had a wrong best match, and seal_tools' long requests, whose best
match is nearly always right, are flagged 2 times in 298; one word, which every lexical
match has, flags almost none."""


def _content(query: SearchQuery) -> set[str]:
    return {t[:5] for t in query.terms if len(t) >= 3 and t not in _STOP}


def confident(query: SearchQuery, best: ToolDescriptor) -> bool:
    """Whether the best match shares enough of the query's content words (compared by
    their first five letters, so plurals and tenses match) to be taken at its word."""
    words = _content(query)
    if not words:
        return True
    text = tool_text(best).replace("_", " ")
    text += " " + " ".join(re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", best.name)).lower()
    shared = sum(1 for w in words if w in text)
    return shared >= min(CONFIDENT_WORDS, len(words))


def named_in(query: SearchQuery, by_name: Mapping[str, ToolDescriptor]) -> list[str]:
    """The tools a keyword query names exactly (a word of it is a tool's name), in its order."""
    out: list[str] = []
    for word in query.text.replace(",", " ").split():
        name = word.lstrip("+").strip("'\"`()")
        if name in by_name and name not in out:
            out.append(name)
    return out


def unsure(query: SearchQuery, hits: Sequence[ToolDescriptor], sizes: Mapping[str, int], most: int = 3) -> str:
    """No confident match: say so, and name the groups the closest tools are in."""
    groups: list[str] = []
    for d in hits:
        if d.group and d.group in sizes and d.group not in groups:
            groups.append(d.group)
    near = ", ".join(f"{g} ({sizes[g]} tools)" for g in groups[:most])
    where = f' Nearest groups: {near}; list one with {_SEARCH} "group:NAME".' if near else ""
    return f"No confident match for {query.text!r}: these are the closest tools, check them before use.{where}"


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
