"""The live view of a run: one line per event, as it happens."""

from __future__ import annotations

from typing import Any

from rich.console import Console

from greenroom import events as ev


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
