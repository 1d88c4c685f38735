"""The live view of a run: each event's own line, as it happens, and the model's text as it
arrives when the model streams.

Every event says how it reads (``Event.describe`` and ``Event.style``), so events that
plugins define show here without this module knowing them. Their text is printed as
text, never as rich markup, and text that is not valid UTF-8 (a lone surrogate) shows as
U+FFFD instead of failing the console.

Each line fits the console's width: what does not fit is cut at its end with an
ellipsis, so a long tool argument or result never wraps into the next line (the
model's answer alone is printed whole). Events put
their numbers first and free text last, so what is cut is the text. In a pipe (not a
terminal) the lines are plain: no style, no wrapping.

Streamed text (``LiveView.text``, given each ``TextDelta``) is indented under its step. A
terminal gets it as it comes, styled like the answer; a pipe gets it a whole line at a
time, plain, so whoever reads the pipe never sees a partial line. The step's
``response`` then shows only the calls the model asked for: its text is on the screen.

A terminal that goes away (SIGHUP: the window closed, the connection dropped) ends the
view, not the run: the run still winds down, writes its trace and saves its session.
"""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from greenroom import events as ev
from greenroom._support.text import printable
from greenroom.models import TextDelta

INDENT = "  "
"""What each line of the model's streamed text starts with, as the step's other lines do."""


def fit(line: str, width: int) -> Text:
    """``line`` as text at most ``width`` cells wide, cut at its end with an ellipsis."""
    text = Text(printable(line).expandtabs(4))
    text.truncate(max(width, 1), overflow="ellipsis")
    return text


class LiveView:
    """Prints a run's events as they happen, one console-wide line each, and the model's
    text as it arrives (``text``)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.gone = False  # the console could not be written: nothing more is printed
        self._pending = ""  # a pipe: the streamed line not ended yet
        self._open = False  # a terminal: a streamed line is on the screen, not ended yet
        self._streamed = False  # this step's text was shown as it came

    def __call__(self, event: ev.Event) -> None:
        if self.gone:
            return
        try:
            self._end_text()
            self._print(event)
        except OSError:  # EIO from a hung-up terminal, EPIPE from a closed pipe
            self.gone = True

    def text(self, delta: TextDelta) -> None:
        """A piece of the model's text, shown as it arrives (a pipe: by whole lines)."""
        if self.gone or not delta.text:
            return
        self._streamed = True
        try:
            if self.console.is_terminal:
                self._write(printable(delta.text))
            else:
                self._pending += delta.text
                *done, self._pending = self._pending.split("\n")
                for line in done:
                    self._line(line)
        except OSError:
            self.gone = True

    def _write(self, text: str) -> None:
        """Streamed text on a terminal: each line indented, flushed at once (a terminal's
        stream would hold a partial line back)."""
        pieces = text.split("\n")
        for i, piece in enumerate(pieces):
            if i:
                self.console.print(highlight=False)  # the line ends
                self._open = False
            if piece:
                out = piece if self._open else INDENT + piece.expandtabs(4)
                self.console.print(Text(out, style="green"), end="", highlight=False, soft_wrap=True)
                self._open = True
        self.console.file.flush()

    def _line(self, line: str) -> None:
        """One whole streamed line in a pipe: plain, whole (the reader wraps it)."""
        self.console.print(Text(printable(INDENT + line) if line else ""), highlight=False, soft_wrap=True)

    def _end_text(self) -> None:
        """The streamed text stops (an event comes): its last line ends."""
        if self._open:
            self.console.print(highlight=False)
            self._open = False
        if self._pending:
            line, self._pending = self._pending, ""
            self._line(line)

    def _print(self, event: ev.Event) -> None:
        if isinstance(event, ev.RequestSent):
            self._streamed = False  # a new step: nothing of it was shown yet
        elif isinstance(event, ev.ResponseReceived) and self._streamed:
            self._streamed = False
            if not event.tool_calls:
                return  # the answer is on the screen already
        described = event.describe()
        if not described:
            return
        style = event.style if self.console.is_terminal else ""
        if isinstance(event, ev.ResponseReceived) and not event.tool_calls:
            # the answer is what the run was for: whole, wrapped by a terminal, as is in a pipe
            text = Text(printable(described), style=style)
            self.console.print(text, highlight=False, soft_wrap=not self.console.is_terminal)
            return
        for line in described.splitlines():
            text = fit(line, self.console.width)
            text.stylize(style)
            # soft_wrap: the line already fits, and a pipe gets it as one plain line
            self.console.print(text, highlight=False, soft_wrap=True)
