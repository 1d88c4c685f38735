"""What people look at: the first-step inspection table and the live view of a run."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.table import Table

from greenroom import events as ev
from greenroom.runtime import Runtime
from greenroom.tokens import count_tokens, tool_tokens


def _placements(snapshot: Any) -> dict[str, tuple[str, str]]:
    """Modes and reasons from any plugin state that exposes ``modes`` (duck-typed, so
    core does not import the deferred-tools plugin)."""
    out: dict[str, tuple[str, str]] = {}
    for value in snapshot.values():
        modes = getattr(value, "modes", None)
        if isinstance(modes, dict):
            for name, placement in modes.items():
                out[name] = (str(getattr(placement, "mode", placement)), str(getattr(placement, "reason", "")))
    return out


async def inspect_runtime(rt: Runtime) -> dict[str, Any]:
    """The first request the model would get, tool by tool, with exact token counts."""
    session = rt.session()
    try:
        request = await rt.preview(session)
    finally:
        await rt.aclose()
    sent = {d.name for d in request.tools}
    placements = _placements(session.snapshot())
    catalog = rt.tools.descriptors()
    seen = {d.name for d in catalog}
    for g in rt.groups.values():
        catalog += [d for d in g.known if d.name not in seen]
    tools: list[dict[str, Any]] = []
    for d in catalog:
        mode, reason = placements.get(d.name, ("eager" if d.name in sent else "deferred", ""))
        if d.name in sent:
            mode = "eager"
        tools.append({"name": d.name, "group": d.group, "mode": mode, "reason": reason, "tokens": tool_tokens(d)})
    all_tokens = sum(int(t["tokens"] or 0) for t in tools)
    sent_tokens = sum(tool_tokens(d) for d in request.tools)
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


class LiveView:
    """Prints a run's events as they happen."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: ev.Event) -> None:
        c = self.console
        if isinstance(event, ev.RequestSent):
            c.print(
                f"[bold cyan]step {event.step}[/] request: system {event.system_tokens:,} + tools "
                f"{event.tools_tokens:,} ({len(event.tool_names)} tools) + messages "
                f"{event.messages_tokens:,} = {event.total_tokens:,} tokens  prefix {event.prefix_hash}",
                highlight=False,
            )
        elif isinstance(event, ev.ResponseReceived):
            for call in event.tool_calls:
                c.print(f"  model calls [bold]{call['name']}[/] {_short(call['arguments'])}", highlight=False)
            if not event.tool_calls and event.text:
                c.print(f"  [bold green]answer:[/] {event.text}", highlight=False)
        elif isinstance(event, ev.ToolCallResolved):
            c.print(f"  resolved {event.requested} -> [bold]{event.resolved}[/]", highlight=False)
        elif isinstance(event, ev.SearchPerformed):
            found = ", ".join(f"{n} ({s:.2f})" for n, s in event.results) or "nothing"
            c.print(f"  search [italic]{event.query!r}[/] -> {found}", highlight=False)
        elif isinstance(event, ev.ToolExecuted):
            mark = "[red]error[/]" if event.is_error else "[green]ok[/]"
            c.print(f"  {mark} {event.tool}: {_short(event.content, 110)}", highlight=False)
        elif isinstance(event, ev.ToolPromoted):
            c.print(f"  [magenta]promote[/] {event.tool} ({event.reason})", highlight=False)
        elif isinstance(event, ev.ToolDeferred):
            c.print(f"  [magenta]defer[/] {event.tool} ({event.reason})", highlight=False)
        elif isinstance(event, ev.GroupLoaded):
            what = event.error or f"{len(event.tools)} tools"
            c.print(f"  [magenta]group load[/] {event.group}: {what}", highlight=False)
        elif isinstance(event, ev.PriorsLoaded):
            c.print(
                f"[dim]priors loaded for {event.agent_id}: {event.tools} tools over {event.sessions} "
                f"session(s) from {event.source}[/]",
                highlight=False,
            )
        elif isinstance(event, ev.PluginWarning):
            c.print(f"[yellow]plugin {event.plugin} ({event.hook}): {event.message}[/]", highlight=False)
        elif isinstance(event, ev.PluginError):
            c.print(f"[red]plugin {event.plugin} failed in {event.hook}: {event.message}[/]", highlight=False)


def _short(value: Any, width: int = 90) -> str:
    import json

    text = value if isinstance(value, str) else json.dumps(value, sort_keys=True, default=str)
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def print_session_costs(console: Console, label: str, results: dict[str, Any]) -> None:
    """A table per price: input tokens, cache hit rate, cost and its ratio to all-eager."""
    prices = list(next(iter(results.values()))["prices"])
    for price in prices:
        base = results["all-eager"]["prices"][price]["cost"]
        table = Table(title=f"{label} · {price}")
        for col in ("strategy", "steps", "input tokens", "cache read", "hit rate", "prefixes", "cost $", "x all-eager"):
            table.add_column(col, justify="left" if col == "strategy" else "right")
        for name, r in results.items():
            p = r["prices"][price]
            table.add_row(
                name,
                str(r["steps"]),
                f"{p['input_tokens']:,}",
                f"{p['cache_read']:,}",
                f"{p['hit_rate']:.0%}",
                str(r["prefixes"]),
                f"{p['cost']:.4f}",
                f"{p['cost'] / base:.3f}",
            )
        console.print(table)


def plot_cumulative(results: dict[str, Any], path: Any, title: str) -> None:
    """Cumulative cost per step, one line per strategy, one panel per price."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as exc:  # the plot is optional; the numbers are printed anyway
        raise RuntimeError("plotting needs matplotlib: pip install 'greenroom[bench]'") from exc
    prices = list(next(iter(results.values()))["prices"])
    fig, axes = plt.subplots(1, len(prices), figsize=(5 * len(prices), 4), squeeze=False)
    for ax, price in zip(axes[0], prices, strict=False):
        for name, r in results.items():
            series = r["prices"][price]["cumulative"]
            ax.plot(range(1, len(series) + 1), series, label=name)
        ax.set_title(price)
        ax.set_xlabel("step")
        ax.set_ylabel("cumulative input+output cost ($)")
        ax.grid(alpha=0.3)
        ax.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
