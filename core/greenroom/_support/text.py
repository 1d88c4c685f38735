"""Text that is not valid Unicode, shown safely.

Python carries bytes that were not UTF-8 as lone surrogates: a file name from a Latin-1
directory (``os.listdir``), a command-line argument (``sys.argv``), a JSON string with a
``"\\ud800"`` escape. Such text is kept as it is everywhere greenroom stores it (sessions
and traces escape it, token counts and hashes take it), and only where it is shown does it
become U+FFFD: a UTF-8 stream refuses a lone surrogate (``UnicodeEncodeError: surrogates
not allowed``), which must never end a run or a command.
"""

from __future__ import annotations

import codecs
import io
import sys

ERRORS = "greenroom.replace"
"""The codec error handler ``safe_streams`` gives the standard streams."""


def printable(text: str) -> str:
    """``text`` with each lone surrogate replaced by U+FFFD (a high and a low surrogate in
    a row are joined into their character); valid text is returned as it is."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    return text


def _replace(error: UnicodeError) -> tuple[str | bytes, int]:
    """Each character the stream's encoding cannot take becomes U+FFFD, or ``?`` where the
    encoding has no U+FFFD either (an ASCII or Latin-1 terminal)."""
    if not isinstance(error, UnicodeEncodeError):
        raise error
    count = error.end - error.start
    try:
        return ("\ufffd" * count).encode(error.encoding), error.end
    except (UnicodeError, LookupError):
        return b"?" * count, error.end


codecs.register_error(ERRORS, _replace)


def safe_streams() -> None:
    """Make ``sys.stdout`` and ``sys.stderr`` write what their encoding cannot take as
    U+FFFD (or ``?``) instead of raising, whatever the locale set (a UTF-8 locale or
    ``PYTHONIOENCODING=utf-8`` makes them strict). Streams that are not text files of the
    standard kind (a test's capture, say) are left as they are."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and stream.errors != ERRORS:
            try:
                stream.reconfigure(errors=ERRORS)
            except (ValueError, OSError):  # pragma: no cover - a stream that cannot change now
                continue
