"""``greenroom priors report``: what an agent's priors say about its tools, and what to
change in its config, each suggestion with its evidence.

From the priors document alone: the tools used most and least (with the share of recent
sessions that called each, from the document's ``sets``), the searches that found nothing
the agent then used, and which tools to name in ``never_defer``. With the agent's config
(``--config``), the tools it has that were never called, and suggestions that need to
know them: ``[tools.policy] deny`` for groups none of whose tools was ever called,
rules that send a small, much used group eager, and tools the config keeps eager that
sessions do not call.

``build`` is pure (the document and what the config says in, the report as data out);
``catalog_of`` builds the config's runtime once to learn its tools and placements;
``render`` prints the report as tables readable at 80 columns and in a pipe.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
from rich.console import Console
from rich.markup import escape
from rich.table import Table

MIN_SESSIONS = 10
"""Sessions the document must hold before anything is suggested."""
DENY_SESSIONS = 20
"""Sessions without a call of a group before denying it is suggested."""
NEVER_DEFER_SHARE = 0.5
"""Share of recent sessions calling a tool that suggests ``never_defer`` for it."""
IDLE_SHARE = 0.02
"""Below this share of recent sessions (and p), a tool the config keeps eager is idle."""
GROUP_MAX = 8
"""A group this small, used in most sessions, is suggested eager by a rule."""


@attrs.frozen
class Catalog:
    """What the agent's config says of its tools: each tool's group, and how the config
    places the ones it keeps eager (``never_defer``, ``rule``, ``default``, ...)."""

    groups: Mapping[str, str | None]
    eager: Mapping[str, str] = attrs.field(factory=dict)


def _shares(doc: Mapping[str, Any]) -> dict[str, float] | None:
    """Per tool, the share of recent sessions that called it (None: an older document
    that does not know)."""
    if not doc.get("sets"):
        return None
    out: dict[str, float] = {}
    for entry in doc["sets"]:
        for name in entry["tools"]:
            out[name] = min(1.0, out.get(name, 0.0) + entry["w"])
    return out


def _glob(names: Sequence[str]) -> str | None:
    """A glob of the names' common prefix, when it ends a word (``time__*``); else None."""
    first, last = min(names), max(names)  # the common prefix of all is that of these two
    prefix = first[: next((i for i, (a, b) in enumerate(zip(first, last, strict=False)) if a != b), len(first))]
    cut = max(prefix.rfind("__") + 2 if "__" in prefix else 0, prefix.rfind("_") + 1)
    return f"{prefix[:cut]}*" if cut >= 3 else None


def _row(name: str, entry: Mapping[str, Any], share: float | None) -> dict[str, Any]:
    return {"tool": name, "share": share, "p": entry["p"], "calls": entry["calls"], "last_used": entry["last_used"]}


def build(
    doc: Mapping[str, Any], *, agent: str, store: str, catalog: Catalog | None = None, limit: int = 10
) -> dict[str, Any]:
    """The report of one checked priors document (``catalog``: what the config says)."""
    tools: Mapping[str, Any] = doc["tools"]
    shares = _shares(doc)
    sessions = int(doc["sessions"])

    def share(name: str) -> float | None:
        return None if shares is None else shares.get(name, 0.0)

    by_use = sorted(tools, key=lambda n: (-(share(n) or 0.0), -tools[n]["p"], -tools[n]["calls"], n))
    most = [_row(n, tools[n], share(n)) for n in by_use[:limit]]
    least = [_row(n, tools[n], share(n)) for n in reversed(by_use[limit:][-limit:])]
    never = None if catalog is None else sorted(n for n in catalog.groups if n not in tools)
    out: dict[str, Any] = {
        "agent": agent,
        "store": store,
        "sessions": sessions,
        "updated": doc["updated"],
        "steps": doc.get("steps") or None,
        "catalog": None if catalog is None else len(catalog.groups),
        "most_used": most,
        "least_used": least,
        "never_used": never,
        "failed_searches": list(doc.get("failed", []))[: limit * 2],
        "suggestions": _suggest(doc, shares, catalog) if sessions >= MIN_SESSIONS else [],
    }
    return out


def _suggest(
    doc: Mapping[str, Any], shares: Mapping[str, float] | None, catalog: Catalog | None
) -> list[dict[str, Any]]:
    tools: Mapping[str, Any] = doc["tools"]
    sessions = int(doc["sessions"])
    out: list[dict[str, Any]] = []
    eager = catalog.eager if catalog is not None else {}
    for name, share in sorted((shares or {}).items(), key=lambda kv: (-kv[1], kv[0])):
        if share < NEVER_DEFER_SHARE or name in eager or name not in tools:
            continue
        if catalog is not None and name not in catalog.groups:
            continue  # not one of the config's tools (the plugin's own, or gone)
        entry = tools[name]
        out.append(
            {
                "kind": "never_defer",
                "tools": [name],
                "config": f'[plugins.deferred-tools] never_defer = ["{name}"]',
                "evidence": f"called in {share:.0%} of recent sessions ({entry['calls']} calls)",
            }
        )
    if catalog is None:
        return out
    for name, source in sorted(eager.items()):
        entry = tools.get(name)
        idle = entry is None or (entry["p"] < IDLE_SHARE and (shares or {}).get(name, 0.0) < IDLE_SHARE)
        if not idle:
            continue
        seen = "never called" if entry is None else f"p={entry['p']:.3f}, last used {entry['last_used'] or '-'}"
        change = (
            f'[plugins.deferred-tools] never_defer: remove "{name}"'
            if source == "never_defer"
            else f'[[plugins.deferred-tools.rules]] tool = "{name}", mode = "deferred"'
        )
        out.append(
            {
                "kind": "rule",
                "tools": [name],
                "config": change,
                "evidence": f"eager by {source}, {seen} in {sessions} sessions",
            }
        )
    by_group: dict[str, list[str]] = {}
    for name, group in catalog.groups.items():
        if group:
            by_group.setdefault(group, []).append(name)
    for group, names in sorted(by_group.items()):
        glob = _glob(sorted(names))
        used = [n for n in names if n in tools]
        if not used and sessions >= DENY_SESSIONS:
            target = glob or ", ".join(f'"{n}"' for n in sorted(names)[:3])
            out.append(
                {
                    "kind": "deny",
                    "tools": sorted(names),
                    "config": f'[tools.policy] deny = ["{glob}"]' if glob else f"[tools.policy] deny = [{target}]",
                    "evidence": f"none of the {len(names)} tools of {group} called in {sessions} sessions",
                }
            )
        elif shares is not None and glob and len(names) <= GROUP_MAX and all(n not in eager for n in names):
            # the share of recent sessions that called any of the group's tools
            together = min(1.0, sum(e["w"] for e in doc["sets"] if not set(names).isdisjoint(e["tools"])))
            if together >= NEVER_DEFER_SHARE:
                out.append(
                    {
                        "kind": "rule",
                        "tools": sorted(names),
                        "config": f'[[plugins.deferred-tools.rules]] tool = "{glob}", mode = "eager"',
                        "evidence": f"{group} ({len(names)} tools) called in {together:.0%} of recent sessions",
                    }
                )
    return out


def render(report: Mapping[str, Any], console: Console) -> None:
    """The report as tables (folded to the console's width, plain in a pipe)."""
    steps = f", {report['steps']:.1f} model calls per session" if report["steps"] else ""
    console.print(
        escape(f"priors of {report['agent']}: {report['sessions']} session(s){steps} ({report['store']})"),
        highlight=False,
    )
    for key, title in (("most_used", "most used"), ("least_used", "least used")):
        rows = report[key]
        if not rows:
            continue
        table = Table(title=title, title_justify="left")
        table.add_column("tool", overflow="fold")
        table.add_column("sessions", justify="right")
        table.add_column("p", justify="right")
        table.add_column("calls", justify="right")
        table.add_column("last used", overflow="fold")
        for r in rows:
            share = "-" if r["share"] is None else f"{r['share']:.0%}"
            table.add_row(escape(r["tool"]), share, f"{r['p']:.3f}", str(r["calls"]), r["last_used"] or "-")
        console.print(table)
    never = report["never_used"]
    if never is None:
        console.print("never used: give --config to compare with the agent's tools", highlight=False)
    else:
        shown = ", ".join(never[:40]) + (f" (+{len(never) - 40} more)" if len(never) > 40 else "")
        console.print(escape(f"never used: {len(never)} of {report['catalog']} tools: {shown or '-'}"), highlight=False)
    if report["failed_searches"]:
        table = Table(title="failed searches (nothing they found was called)", title_justify="left")
        table.add_column("query", overflow="fold", ratio=3)
        table.add_column("times", justify="right")
        table.add_column("found", overflow="fold", ratio=2)
        for f in report["failed_searches"]:
            table.add_row(escape(f["query"]), str(f["count"]), escape(", ".join(f["found"]) or "nothing"))
        console.print(table)
    if report["suggestions"]:
        table = Table(title="suggestions", title_justify="left")
        table.add_column("change", overflow="fold", ratio=3)
        table.add_column("evidence", overflow="fold", ratio=2)
        for s in report["suggestions"]:
            table.add_row(escape(s["config"]), escape(s["evidence"]))
        console.print(table)


async def catalog_of(config: Path) -> Catalog:
    """The agent's tools and how its config places them: its runtime built once, a
    preview run (no model call), the placements ``greenroom inspect`` shows."""
    from greenroom import RunKind, abuild_runtime

    rt = await abuild_runtime(config, offline_model=True)
    try:
        run = rt.start_run(kind=RunKind.PREVIEW)
        await run.start()
        try:
            await run.next_request()
            answers = await rt.host.call("greenroom_inspect_tools", ctx=run.ctx)
        finally:
            await run.end(run.outcome_of("preview"))
        placed: dict[str, Any] = {}
        for answer in answers:
            for name, placement in (answer or {}).items():
                placed.setdefault(name, placement)
        own = set(rt.plugin_tool_names)
        hidden = run.ctx.hidden
        groups = {d.name: d.group for d in rt.universe() if d.name not in own and d.name not in hidden}
        eager = {
            name: p.source
            for name, p in placed.items()
            if name in groups and p.mode == "eager" and p.source not in ("prior", "promotion")
        }
        return Catalog(groups, eager)
    finally:
        await rt.aclose()
