"""The system-prompt section that tells the model which deferred tools exist.

When the whole listing fits ``listing_budget`` (in the configured style, or with names
only), it is sent as it is. When it does not, the model still sees the catalog's
structure: every group (tool groups and servers, then catalog domains) with a one-line
description and a count, and as many tool names as fit, chosen well: the tools learned
priors say are used first (a share of the room is kept for them, and their groups' lines
before others' when not every group fits), then the others spread across groups in turn.
It can list a whole group's names with ``ToolSearch "group:NAME"`` without paying for
schemas. Only a budget too small for even the groups' lines leaves a bare count. Skills
(a skills group's tools) are listed apart, each with its description's first line, as
the model chooses a skill by what it is for.

The work is bounded by the budget, not by the catalog: no text longer than the budget
allows is rendered or token-counted whole.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Literal

from greenroom import GroupView, ToolDescriptor, count_tokens
from greenroom.kit import count_tokens_upto, descriptor_costs

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
    priority: Mapping[str, float] | None = None,
) -> str:
    """The listing in ``style`` when it fits ``budget`` tokens (0: no limit), else names
    only when they fit, else the catalog's structure with as many names as fit
    (``priority``: tools to name first, by how likely they are used)."""
    if not budget:
        return render_listing(deferred, style=style, hint=hint, groups=groups)
    for whole in STYLES[STYLES.index(style) : STYLES.index("names") + 1]:
        if _surely_too_long(deferred, groups, whole, budget):
            continue
        text = render_listing(deferred, style=whole, hint=hint, groups=groups)
        if count_tokens_upto(text, budget) is not None:
            return text
    return structured_listing(deferred, budget=budget, hint=hint, groups=groups, priority=priority or {})


LISTING_SHARE = 4
"""The listing never costs more than 1/LISTING_SHARE of the schemas it stands for (nor
less than 1/LISTING_FLOOR of its budget): what greenroom adds stays well below what it
saves, however small the tools are."""
LISTING_FLOOR = 8


def listing_budget(deferred: Sequence[ToolDescriptor], budget: int) -> int:
    """The listing's budget: ``budget`` (0: no limit), and at most 1/LISTING_SHARE of
    what sending every deferred tool's schema would cost, but not below 1/LISTING_FLOOR
    of ``budget`` (a small catalog keeps its groups' lines). The schemas are counted only
    until they pass ``LISTING_SHARE`` times the budget (past it, the budget is the bound),
    so a catalog of any size costs a few chunks."""
    if not budget:
        return 0
    enough = budget * LISTING_SHARE
    total = done = 0
    size = 64
    while done < len(deferred) and total <= enough:
        chunk = deferred[done : done + size]
        total += sum(descriptor_costs(chunk, "definition_tokens"))
        done += len(chunk)
        size *= 2
    return budget if total > enough else max(budget // LISTING_FLOOR, total // LISTING_SHARE)


_MAX_CHARS_PER_TOKEN = 8
"""More characters than this per token no listing reaches (names and prose run at 3-5)."""


def _surely_too_long(
    deferred: Sequence[ToolDescriptor], groups: Sequence[GroupView], style: Style, budget: int
) -> bool:
    """Whether the whole listing could not fit, from its length alone: adds up lengths only
    until it is sure, so a catalog of any size costs at most ``budget`` items."""
    room = budget * _MAX_CHARS_PER_TOKEN
    used = 0
    for g in groups:
        used += len(g.description) + sum(len(n) + 2 for n in g.tool_names[: room // 2 + 1])
        used += sum(len(first_line(d.description)) for d in g.known[: room // 2 + 1]) if g.skills else 0
        if used > room:
            return True
    for d in deferred:
        used += len(d.name) + 2 + (len(d.description) if style == "descriptions" else 0)
        if used > room:
            return True
    return False


class _Section:
    """One group of the structured listing: its line, its names, the names shown."""

    __slots__ = ("cost", "extra", "line", "names", "next", "shown")  # thousands at 100,000 tools

    def __init__(self, line: str, names: Sequence[str], extra: str = "") -> None:
        self.line = line
        self.names = names
        self.extra = extra
        self.shown: list[str] = []
        self.next = 0  # the position of the next name to offer in turn
        # tokens of its lines without the names: every section is fitted, and the room the
        # shown ones leave is worked out from the same counts
        self.cost = _lines_cost([line, extra] if extra else [line])

    def render(self, out: list[str]) -> None:
        out.append(self.line)
        if self.extra:
            out.append(self.extra)
        if self.shown:
            rest = len(self.names) - len(self.shown)
            out.append("  " + ", ".join(self.shown) + (f", ... (+{rest} more)" if rest else ""))


_NO_GROUP = object()  # before the first tool: no group is this one


def _kind(group: GroupView) -> str:
    return "skills" if group.skills else "tools"


def _sections(deferred: Sequence[ToolDescriptor], groups: Sequence[GroupView]) -> tuple[list[_Section], list[_Section]]:
    """Tool groups (with their declared names), then catalog domains (deferred tools by
    their descriptor's group), each in a stable order."""
    tool_groups = [
        _Section(
            f"- `{g.id}` — {g.name}: {first_line(g.description)} ({len(g.tool_names)} {_kind(g)})",
            g.tool_names,
            "  Server instructions: " + first_line(" ".join(g.instructions.split()), 300) if g.instructions else "",
        )
        for g in sorted(groups, key=lambda g: g.id)
        if g.tool_names or not g.skills  # a skills group with no skill yet says nothing
    ]
    by_domain: dict[str, list[str]] = {}
    names: list[str] = []  # the names of the current run of tools of one domain
    last: object = _NO_GROUP
    for d in deferred:  # a catalog keeps a domain's tools together: one lookup per run of them
        if d.group is not last:
            last = d.group
            names = by_domain.setdefault(d.group or "other", [])
        names.append(d.name)
    domains = [_Section(f"- {name} ({len(names)} tools)", names) for name, names in sorted(by_domain.items())]
    return tool_groups, domains


def structured_listing(
    deferred: Sequence[ToolDescriptor],
    *,
    budget: int,
    hint: str,
    groups: Sequence[GroupView] = (),
    priority: Mapping[str, float],
) -> str:
    """Every group with its count, and the names that fit ``budget`` tokens."""
    tool_groups, domains = _sections(deferred, groups)
    total = len(deferred) + sum(len(g.tool_names) for g in groups)
    head = [
        f"Deferred tools (schemas not loaded). {hint}",
        f"{total} deferred tools in {len(tool_groups) + len(domains)} groups; the names below are a selection. "
        f'List every name in a group with {SEARCH_TOOL} "group:NAME", or search by keywords.',
    ]
    room = budget - _lines_cost(head) - _MARGIN
    # the likeliest used names are worth more than the lines of the smallest groups: a
    # share of the room is kept for them, and their groups are kept first
    reserve, favoured = _reserve(tool_groups + domains, priority, room // PRIORITY_SHARE)
    fitted = room - reserve
    shown_groups, rest = _fit_sections(
        tool_groups, fitted - _lines_cost([_GROUPS_TITLE]) if tool_groups else fitted, favoured
    )
    room -= _lines_cost([_GROUPS_TITLE]) if shown_groups else 0
    room -= sum(s.cost for s in shown_groups)
    fitted = room - reserve
    shown_domains, rest_domains = _fit_sections(
        domains, fitted - (_lines_cost([_DOMAINS_TITLE]) if domains else 0), favoured
    )
    room -= _lines_cost([_DOMAINS_TITLE]) if shown_domains else 0
    room -= sum(s.cost for s in shown_domains)
    hidden_groups = rest + rest_domains
    if hidden_groups:
        room -= _lines_cost([_more_groups(hidden_groups)])
    _choose_names([*shown_groups, *shown_domains], room, priority)

    def render() -> str:
        out = list(head)
        if shown_groups:
            out += ["", _GROUPS_TITLE]
            for sec in shown_groups:
                sec.render(out)
        if shown_domains:
            out += ["", _DOMAINS_TITLE]
            for sec in shown_domains:
                sec.render(out)
        if hidden_groups:
            out.append(_more_groups(hidden_groups))
        if not shown_groups and not shown_domains:
            out.append(f"{total} deferred tools; find them with {SEARCH_TOOL}.")
        return "\n".join(out)

    text = render()
    # the parts were counted one by one; the whole is checked once, and names are dropped
    # from the end while it does not fit
    for _ in range(8):
        if count_tokens_upto(text, budget) is not None:
            return text
        named = [s for s in (*shown_groups, *shown_domains) if s.shown]
        if not named:
            break
        for s in named:
            del s.shown[max(0, len(s.shown) * 3 // 4) :]
        text = render()
    return text


SEARCH_TOOL = "ToolSearch"
_MARGIN = 16  # tokens kept free for what per-line counts miss where lines join
_GROUPS_TITLE = "Tool groups (load a whole group with load_tools(group_id, tool_names?)):"
_DOMAINS_TITLE = "Other deferred tools, by domain:"


def _more_groups(sections: Sequence[_Section]) -> str:
    names = sum(len(s.names) for s in sections)
    return f"... and {len(sections)} more groups with {names} tools: search by keywords to find them."


def _lines_cost(lines: Sequence[str]) -> int:
    return sum(count_tokens(line) + 1 for line in lines)


_MORE_COST = 24
"""Tokens of ``_more_groups``' line at any catalog size (about 20 with 7-digit counts)."""


PRIORITY_SHARE = 4
"""At most 1/PRIORITY_SHARE of the listing's room is kept for the names priors favour."""


def _reserve(sections: Sequence[_Section], priority: Mapping[str, float], room: int) -> tuple[int, set[int]]:
    """Tokens for the likeliest used names (as many as fit ``room``, likeliest first) and
    the sections (by id) they are in."""
    if not priority:
        return 0, set()
    owner = {n: s for s in sections for n in s.names if n in priority}
    used = 0
    favoured: set[int] = set()
    for name in sorted(owner, key=lambda n: (-priority[n], n)):
        cost = count_tokens(name) + 1 + (0 if id(owner[name]) in favoured else 3)
        if used + cost > room:
            break
        used += cost
        favoured.add(id(owner[name]))
    return used, favoured


def _fit_sections(
    sections: list[_Section], room: int, favoured: Collection[int] = ()
) -> tuple[list[_Section], list[_Section]]:
    """The sections whose lines fit ``room`` tokens (when not all do: those ``favoured``
    first, then the largest), kept in their order, and the rest."""
    cost = [s.cost for s in sections]
    if sum(cost) <= room:
        return sections, []
    room -= _MORE_COST  # the line saying how many more groups there are
    keep: set[int] = set()
    used = 0
    for i in sorted(range(len(sections)), key=lambda i: (id(sections[i]) not in favoured, -len(sections[i].names))):
        if used + cost[i] > room:
            continue
        keep.add(i)
        used += cost[i]
    return [s for i, s in enumerate(sections) if i in keep], [s for i, s in enumerate(sections) if i not in keep]


def _choose_names(sections: Sequence[_Section], room: int, priority: Mapping[str, float]) -> None:
    """Fill ``room`` tokens with names: the likeliest used first, then one per group in
    turn, so every group shows some."""
    owner = {}
    for s in sections if priority else ():  # no priors: no pass over every name shown groups have
        for n in s.names:
            if n in priority:
                owner[n] = s
    line_cost = {id(s): 3 for s in sections}  # the names line's indent, ellipsis and count
    shown: set[str] = set()

    def take(s: _Section, name: str) -> bool:
        nonlocal room
        cost = count_tokens(name) + 1 + (line_cost.pop(id(s), 0))
        if cost > room:
            return False
        room -= cost
        s.shown.append(name)
        shown.add(name)
        return True

    for name in sorted(owner, key=lambda n: (-priority[n], n)):
        if not take(owner[name], name):
            return
    active = [s for s in sections if s.names]
    while active and room > 0:
        still = []
        for s in active:
            while s.next < len(s.names) and s.names[s.next] in shown:
                s.next += 1
            if s.next >= len(s.names):
                continue
            if not take(s, s.names[s.next]):
                return
            s.next += 1
            still.append(s)
        active = still


SKILLS_TITLE = "Skills (instructions for a task; call a skill, with no arguments, to load them):"


def _skill_lines(groups: Sequence[GroupView]) -> list[str]:
    """Each skill by its tool's name and its description's first line, by group (a skills
    group that has none yet is left out)."""
    lines: list[str] = []
    for g in sorted(groups, key=lambda g: g.id):
        if not g.known:
            continue
        lines += ["", SKILLS_TITLE] if not lines else []
        lines.append(f"- `{g.id}` — {g.description} ({len(g.known)} skills)")
        lines.extend(f"  {d.name} - {first_line(d.description)}" for d in sorted(g.known, key=lambda d: d.name))
    return lines


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
    skills = [g for g in groups if g.skills]
    groups = [g for g in groups if not g.skills]
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
    lines += _skill_lines(skills)
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
