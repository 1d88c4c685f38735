"""What the model would see on step 1, tool by tool, with exact token counts, and why
each tool is placed where it is (the ``greenroom_inspect_tools`` hook)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table
from rich.text import Text

from greenroom.models import ToolPlacement
from greenroom.run.context import RunContext, RunKind
from greenroom.run.runtime import Runtime
from greenroom.tokens.counting import count_tokens
from greenroom.tokens.tool_costs import tool_costs


async def placements(rt: Runtime, ctx: RunContext) -> dict[str, ToolPlacement]:
    """What the plugins say about each tool's placement in the context's session; when
    two name one tool, the first answer in hook order wins."""
    out: dict[str, ToolPlacement] = {}
    answers: list[Mapping[str, ToolPlacement]] = await rt.host.call("greenroom_inspect_tools", ctx=ctx)
    for answer in answers:
        for name, placement in (answer or {}).items():
            out.setdefault(name, placement)
    return out


async def inspect_runtime(rt: Runtime) -> dict[str, Any]:
    """The first request the model would get, tool by tool, with exact token counts.

    Every tool the runtime knows is a row: the agent's tools (eager or deferred), the
    plugins' own tools (``plugin``: sent, but not part of the all-eager baseline, which
    would not have them), hidden tools (``hidden``, with the rule or plugin that hid
    them; never sent, and not in the baseline either) and tools whose parameter schema is
    invalid (``unusable``, with the problem; never sent, not in the baseline)."""
    run = rt.start_run(kind=RunKind.PREVIEW)
    ctx = run.ctx
    try:
        await run.start()
        request = await run.next_request()
        placed = await placements(rt, ctx)
    finally:
        await run.end(run.outcome_of("preview"))
        await rt.aclose()
    # tools a provider's hosted search keeps out of the context until found are not sent
    sent_tools = [d for d in request.tools if d.name not in request.deferred]
    sent = {d.name for d in sent_tools}
    hidden = ctx.scope.reasons
    hidden_groups = ctx.scope.group_reasons
    tools: list[dict[str, Any]] = []
    universe = rt.universe()
    definition = dict(zip((d.name for d in universe), tool_costs(universe, "definition_tokens"), strict=True))
    for d in universe:
        placement = placed.get(d.name)
        why = hidden.get(d.name) or (hidden_groups.get(d.group) if d.group else None)
        if why is not None:
            mode, source, reason = "hidden", why.by.value, why.describe()
        elif d.name in rt.plugin_tool_names:
            mode, source, reason = ("plugin" if d.name in sent else "unsent"), "plugin", "a plugin's own tool"
        else:
            mode = "eager" if d.name in sent else placement.mode if placement is not None else "deferred"
            source = placement.source if placement is not None else ""
            reason = placement.detail if placement is not None else ""
        row = {"name": d.name, "group": d.group, "mode": mode, "source": source, "reason": reason}
        tools.append({**row, "tokens": definition[d.name]})
    for name, problem in sorted(rt.tools.unusable.items()):
        if name not in hidden:  # never sent: its schema is invalid (a provider would refuse the request)
            group = rt.group_of(name)
            row = {"name": name, "group": group.id if group else None, "mode": "unusable", "source": "schema"}
            tools.append({**row, "reason": f"invalid parameter schema: {problem}", "tokens": 0})
    agent_tools = [t for t in tools if t["mode"] in ("eager", "deferred")]
    all_tokens = sum(int(t["tokens"] or 0) for t in agent_tools)
    sent_tokens = sum(tool_costs(sent_tools, "definition_tokens"))
    system_tokens = count_tokens(request.system_text)
    base_system = count_tokens(rt.agent.system_prompt)
    return {
        "agent": rt.agent.id,
        "request": request,
        "tools": tools,
        "totals": {
            "tools": len(agent_tools),
            "eager": sum(1 for t in agent_tools if t["mode"] == "eager"),
            "deferred": sum(1 for t in agent_tools if t["mode"] != "eager"),
            "hidden": sum(1 for t in tools if t["mode"] == "hidden"),
            "hidden_groups": sorted(hidden_groups),
            "plugin": sum(1 for t in tools if t["mode"] == "plugin"),
            "unusable": sum(1 for t in tools if t["mode"] == "unusable"),
            "all_eager_tokens": all_tokens + base_system,
            "sent_tools_tokens": sent_tokens,
            "sent_system_tokens": system_tokens,
            "sent_tokens": sent_tokens + system_tokens,
            "saved_ratio": round(1 - (sent_tokens + system_tokens) / max(1, all_tokens + base_system), 4),
        },
    }


_MODE_ORDER = {"eager": 0, "plugin": 1, "deferred": 2, "unsent": 3, "hidden": 4, "unusable": 5}
_MODE_STYLE = {"eager": "green", "plugin": "cyan", "hidden": "red", "unusable": "yellow"}


def print_inspection(console: Console, report: dict[str, Any], limit: int = 40) -> None:
    tools = sorted(report["tools"], key=lambda t: (_MODE_ORDER.get(t["mode"], 9), -t["tokens"], t["name"]))
    table = Table(title=f"what agent {report['agent']!r} sees on step 1")
    for col, just in (("tool", "left"), ("group", "left"), ("mode", "left"), ("why", "left"), ("tokens", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for t in tools[:limit]:
        mode = Text(t["mode"], style=_MODE_STYLE.get(t["mode"], "dim"))
        # names and reasons come from servers, catalogs and plugins: never read as markup
        table.add_row(Text(t["name"]), Text(t["group"] or ""), mode, Text(t["reason"]), str(t["tokens"]))
    if len(tools) > limit:
        table.add_row(f"... {len(tools) - limit} more", "", "", "", "")
    console.print(table)
    tot = report["totals"]
    summary = Table(title="tokens on step 1 (exact, o200k)")
    summary.add_column("")
    summary.add_column("tokens", justify="right")
    summary.add_row("all tools eager (tools + base prompt)", f"{tot['all_eager_tokens']:,}")
    summary.add_row("sent: tools array", f"{tot['sent_tools_tokens']:,}")
    summary.add_row("sent: system prompt (incl. listings)", f"{tot['sent_system_tokens']:,}")
    summary.add_row("[bold]sent in all[/]", f"[bold]{tot['sent_tokens']:,}[/]")
    summary.add_row("saved", f"{tot['saved_ratio']:.1%}")
    console.print(summary)
    line = f"{tot['tools']} tools: {tot['eager']} eager, {tot['deferred']} deferred"
    if tot["hidden"] or tot["hidden_groups"]:
        line += f"; {tot['hidden']} hidden by policy or plugins"
        if tot["hidden_groups"]:
            line += f" (whole groups: {', '.join(tot['hidden_groups'])})"
    if tot["unusable"]:
        line += f"; {tot['unusable']} unusable (invalid schema, never sent)"
    console.print(Text(line))


def first_request_json(rt: Runtime, report: Mapping[str, Any]) -> dict[str, Any]:
    """The first request exactly as greenroom hands it to the provider (system sections,
    tools, what a hosted search holds back), and the provider's own request body when
    its SDK is installed here."""
    request = report["request"]
    out: dict[str, Any] = {
        "model": rt.agent.model,
        "system": [{"key": s.key, "stable": s.stable, "text": s.text} for s in request.system],
        "tools": [d.to_json() for d in request.tools],
        "deferred": sorted(request.deferred),
        "messages": [{"role": m.role, "content": m.content} for m in request.messages],
    }
    build_body = getattr(rt.model, "build_body", None)
    if callable(build_body):
        out["provider_body"] = build_body(request)
    else:
        reason = getattr(rt.model, "reason", None)
        out["provider_body"] = None
        out["provider_note"] = reason or "this model builds no provider request body"
    return out
