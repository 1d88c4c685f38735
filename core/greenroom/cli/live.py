"""The live view of a run: each event's own line, as it happens.

Every event says how it reads (``Event.describe`` and ``Event.style``), so events that
plugins define show here without this module knowing them. Their text is printed as
text, never as rich markup.

Each line fits the console's width: what does not fit is cut at its end with an
ellipsis, so a long tool argument or result never wraps into the next line (the
model's answer alone is printed whole). Events put
their numbers first and free text last, so what is cut is the text. In a pipe (not a
terminal) the lines are plain: no style, no wrapping.

A terminal that goes away (SIGHUP: the window closed, the connection dropped) ends the
view, not the run: the run still winds down, writes its trace and saves its session.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from greenroom import events as ev


def fit(line: str, width: int) -> Text:
    """``line`` as text at most ``width`` cells wide, cut at its end with an ellipsis."""
    text = Text(line.expandtabs(4))
    text.truncate(max(width, 1), overflow="ellipsis")
    return text


class LiveView:
    """Prints a run's events as they happen, one console-wide line each."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.gone = False  # the console could not be written: nothing more is printed

    def __call__(self, event: ev.Event) -> None:
        if self.gone:
            return
        try:
            self._print(event)
        except OSError:  # EIO from a hung-up terminal, EPIPE from a closed pipe
            self.gone = True

    def _print(self, event: ev.Event) -> None:
        described = event.describe()
        if not described:
            return
        style = event.style if self.console.is_terminal else ""
        if isinstance(event, ev.ResponseReceived) and not event.tool_calls:
            # the answer is what the run was for: whole, wrapped by a terminal, as is in a pipe
            self.console.print(Text(described, style=style), highlight=False, soft_wrap=not self.console.is_terminal)
            return
        for line in described.splitlines():
            text = fit(line, self.console.width)
            text.stylize(style)
            # soft_wrap: the line already fits, and a pipe gets it as one plain line
            self.console.print(text, highlight=False, soft_wrap=True)
