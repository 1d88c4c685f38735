"""What the model would see on step 1, tool by tool, with exact token counts, and why
each tool is placed where it is (the ``greenroom_inspect_tools`` hook)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from greenroom.context import RunContext
from greenroom.models import ToolPlacement
from greenroom.runtime import Runtime
from greenroom.session import Session
from greenroom.tokens import count_tokens, tool_tokens


async def placements(rt: Runtime, session: Session) -> dict[str, ToolPlacement]:
    """What the plugins say about each tool's placement in ``session``; when two name
    one tool, the first answer in hook order wins."""
    ctx = RunContext(rt, session, "inspect", "")
    ctx.step = 1
    out: dict[str, ToolPlacement] = {}
    answers: list[Mapping[str, ToolPlacement]] = await rt.host.call("greenroom_inspect_tools", ctx=ctx)
    for answer in answers:
        for name, placement in (answer or {}).items():
            out.setdefault(name, placement)
    return out


async def inspect_runtime(rt: Runtime) -> dict[str, Any]:
    """The first request the model would get, tool by tool, with exact token counts."""
    session = rt.session()
    try:
        request = await rt.preview(session)
        placed = await placements(rt, session)
    finally:
        await rt.aclose()
    # tools a provider's hosted search keeps out of the context until found are not sent
    sent_tools = [d for d in request.tools if d.name not in request.deferred]
    sent = {d.name for d in sent_tools}
    catalog = rt.tools.descriptors()
    seen = {d.name for d in catalog}
    for g in rt.groups.values():
        catalog += [d for d in g.known if d.name not in seen]
    tools: list[dict[str, Any]] = []
    for d in catalog:
        placement = placed.get(d.name)
        mode = "eager" if d.name in sent else placement.mode if placement is not None else "deferred"
        tools.append(
            {
                "name": d.name,
                "group": d.group,
                "mode": mode,
                "source": placement.source if placement is not None else "",
                "reason": placement.detail if placement is not None else "",
                "tokens": tool_tokens(d),
            }
        )
    all_tokens = sum(int(t["tokens"] or 0) for t in tools)
    sent_tokens = sum(tool_tokens(d) for d in sent_tools)
    system_tokens = count_tokens(request.system_text)
    base_system = count_tokens(rt.agent.system_prompt)
    return {
        "agent": rt.agent.id,
        "tools": tools,
        "totals": {
            "tools": len(tools),
            "eager": sum(1 for t in tools if t["mode"] == "eager"),
            "deferred": sum(1 for t in tools if t["mode"] != "eager"),
            "all_eager_tokens": all_tokens + base_system,
            "sent_tools_tokens": sent_tokens,
            "sent_system_tokens": system_tokens,
            "sent_tokens": sent_tokens + system_tokens,
            "saved_ratio": round(1 - (sent_tokens + system_tokens) / max(1, all_tokens + base_system), 4),
        },
    }


def print_inspection(console: Console, report: dict[str, Any], limit: int = 40) -> None:
    tools = sorted(report["tools"], key=lambda t: (t["mode"] != "eager", -t["tokens"], t["name"]))
    table = Table(title=f"what agent {report['agent']!r} sees on step 1")
    for col, just in (("tool", "left"), ("group", "left"), ("mode", "left"), ("why", "left"), ("tokens", "right")):
        table.add_column(col, justify=just)  # type: ignore[arg-type]
    for t in tools[:limit]:
        colour = "green" if t["mode"] == "eager" else "dim"
        table.add_row(t["name"], t["group"] or "", f"[{colour}]{t['mode']}[/]", t["reason"], str(t["tokens"]))
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
    console.print(f"{tot['tools']} tools: {tot['eager']} eager, {tot['deferred']} deferred")
