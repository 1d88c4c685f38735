"""The system-prompt section that tells the model which deferred tools exist."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

from greenroom import GroupView, ToolDescriptor, count_tokens

SECTION_KEY = "deferred-tools"

Style = Literal["descriptions", "names", "groups", "count"]
STYLES: tuple[Style, ...] = ("descriptions", "names", "groups", "count")


def first_line(text: str, width: int = 90) -> str:
    """The first sentence of a description, cut to ``width`` characters."""
    line = (text or "").strip().split("\n", 1)[0].strip()
    end = line.find(". ")
    if end > 0:
        line = line[: end + 1]
    return line if len(line) <= width else line[: width - 3].rstrip() + "..."


def budgeted_listing(
    deferred: Sequence[ToolDescriptor],
    *,
    style: Style,
    budget: int,
    hint: str,
    groups: Sequence[GroupView] = (),
) -> str:
    """The listing in ``style``, or in the first smaller style that fits ``budget``
    tokens (0: no limit): an oversized listing would flood the prompt."""
    text = ""
    for smaller in STYLES[STYLES.index(style) :]:
        text = render_listing(deferred, style=smaller, hint=hint, groups=groups)
        if not budget or count_tokens(text) <= budget:
            break
    return text


def render_listing(
    deferred: Sequence[ToolDescriptor],
    *,
    style: Style,
    hint: str,
    groups: Sequence[GroupView] = (),
) -> str:
    """The listing, deterministic for a given input (sorted by group, then name).
    ``hint`` tells the model how to get and call a deferred tool."""
    lines = [f"Deferred tools (schemas not loaded). {hint}"]
    if groups:
        lines.append("")
        lines.append("Tool groups (load a whole group with load_tools(group_id, tool_names?)):")
        for g in sorted(groups, key=lambda g: g.id):
            names = g.tool_names
            lines.append(f"- `{g.id}` — {g.name}: {first_line(g.description)} ({len(names)} tools)")
            if names:
                lines.append("  " + ", ".join(names))
            if g.instructions:
                lines.append("  Server instructions: " + " ".join(g.instructions.split()))
    if not deferred:
        return "\n".join(lines)
    by_group: dict[str, list[ToolDescriptor]] = {}
    for d in deferred:
        by_group.setdefault(d.group or "", []).append(d)
    lines.append("")
    if style == "count":
        lines.append(f"{len(deferred)} deferred tools in {len(by_group)} group(s); find them with search.")
        return "\n".join(lines)
    if style == "groups":
        counts = ", ".join(f"{g or 'other'} ({len(ts)})" for g, ts in sorted(by_group.items()))
        lines.append(f"{len(deferred)} deferred tools, by group: {counts}.")
        return "\n".join(lines)
    lines.append("<available-deferred-tools>")
    for group in sorted(by_group):
        tools = sorted(by_group[group], key=lambda d: d.name)
        if style == "names":
            prefix = f"{group}: " if group else ""
            # a space joins names for free: BPE folds it into the next name's first token
            lines.append(prefix + " ".join(d.name for d in tools))
            continue
        if group:
            lines.append(f"[{group}]")
        lines.extend(f"{d.name} - {first_line(d.description)}" for d in tools)
    lines.append("</available-deferred-tools>")
    return "\n".join(lines)
