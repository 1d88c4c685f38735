"""The live view of a run: each event's own line, as it happens.

Every event says how it reads (``Event.describe`` and ``Event.style``), so events that
plugins define show here without this module knowing them. Their text is printed as
text, never as rich markup.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from greenroom import events as ev


class LiveView:
    """Prints a run's events as they happen."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def __call__(self, event: ev.Event) -> None:
        line = event.describe()
        if line:
            self.console.print(Text(line, style=event.style), highlight=False)
