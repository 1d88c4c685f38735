"""A kept result read back: its lines by number, or those a regular expression matches
(``read_result``: the model's tool, and the same for a plugin).

Lines are the result's own, except that one longer than ``LINE_CHARS`` counts as several
(a JSON document of megabytes on one line reads in pieces); the cut result's note numbers
them the same way. Each line read comes back as ``NUMBER:text`` (``NUMBER-text`` for the
lines of context around a match, ``--`` between groups, as ``grep -n -C`` writes them).

What one read returns is bounded: at most ``limit`` lines (matching lines for a pattern)
and ``READ_TOKENS`` tokens (less under a smaller ``[agent] max_result_tokens``, so a read
is never cut itself); the last line says where to go on. A pattern is bounded before it
runs (``MAX_PATTERN`` characters, counted repeats at most ``MAX_REPEAT`` in all, which is
what the ``regex`` module's compiler expands) and while it runs: the ``regex`` module's
own timeout (``PATTERN_SECONDS`` for the whole search) stops one that backtracks without
end, and it matches with the GIL released, in a worker thread.
"""

from __future__ import annotations

import functools
import re
import time
from bisect import bisect_right
from collections.abc import Collection

import anyio.to_thread
import regex

from greenroom import RunContext, ToolResult
from greenroom.kit import count_tokens_upto
from greenroom_results.kept import NotKept, read

LINE_CHARS = 1000
DEFAULT_LIMIT = 200
MAX_LIMIT = 2000
CONTEXT = 2
READ_TOKENS = 8000
PATTERN_SECONDS = 1.0
MAX_PATTERN = 1000
MAX_REPEAT = 10_000

_COUNTED = re.compile(r"\\.|\{(\d*)(?:,(\d*))?\}", re.DOTALL)


class PatternError(ValueError):
    """A pattern that cannot be used: not a regular expression, or one over a bound."""


def line_starts(text: str) -> list[int]:
    """Where each line of ``text`` starts, a line over ``LINE_CHARS`` counting as several."""
    starts: list[int] = []
    pos, end = 0, len(text)
    while pos < end:
        nl = text.find("\n", pos)
        stop = end if nl < 0 else nl
        starts.extend(range(pos, stop, LINE_CHARS) or (pos,))
        pos = end if nl < 0 else nl + 1
    return starts


def line_at(starts: list[int], pos: int) -> int:
    """The number (from 1) of the line holding character ``pos``."""
    return max(1, bisect_right(starts, pos))


def compile_pattern(pattern: str) -> regex.Pattern[str]:
    """``pattern`` compiled (multi-line: ``^`` and ``$`` at every line), or ``PatternError``."""
    if len(pattern) > MAX_PATTERN:
        raise PatternError(f"it is {len(pattern):,} characters long; at most {MAX_PATTERN:,}")
    asked = 1
    for m in _COUNTED.finditer(pattern):
        if not m.group().startswith("\\"):
            asked *= max([int(n) for n in m.groups() if n] or [1])
    if asked > MAX_REPEAT:
        raise PatternError(f"its counted repeats ({{n}}) ask for {asked:,} repetitions in all; at most {MAX_REPEAT:,}")
    try:
        return regex.compile(pattern, regex.MULTILINE)
    except regex.error as exc:
        raise PatternError(str(exc)) from None
    except (MemoryError, RecursionError, OverflowError):
        raise PatternError("it is too large to compile") from None


async def read_result(
    ctx: RunContext, call_id: str, *, offset: int | None = None, limit: int | None = None, pattern: str | None = None
) -> ToolResult:
    """Read what was kept of the result of ``call_id`` in the run's session (a result over
    ``[agent] max_result_tokens`` that greenroom cut): its lines from ``offset`` (from 1,
    ``limit`` of them), or with ``pattern`` the lines a regular expression matches from
    there, with a little context. Bounded below the result limit; an error result says why
    nothing can be read (none kept for that id in this session, a tool this run may not use
    made it, a bad pattern, a pattern that ran out of time, an offset past the end)."""
    max_tokens = ctx.agent.max_result_tokens
    work = functools.partial(_read, ctx.session_id, ctx.hidden, call_id, offset, limit, pattern, max_tokens)
    return await anyio.to_thread.run_sync(work)


def _read(
    session_id: str,
    hidden: Collection[str],
    call_id: str,
    offset: int | None,
    limit: int | None,
    pattern: str | None,
    max_tokens: int,
) -> ToolResult:
    try:
        header, text = read(session_id, call_id)
        if header.get("tool") in hidden:  # as absent as the tool itself
            raise NotKept("nothing is kept for it")
    except NotKept as exc:
        return ToolResult.error(
            f"no kept result for call_id {call_id!r} in this session: {exc.reason}. A result is kept when "
            "greenroom cuts it, and its note names the call_id to read it by (the oldest go first when a "
            "session keeps too much)"
        )
    starts = line_starts(text)
    first = 1 if offset is None else offset
    if first < 1 or (first > len(starts) and starts):
        return ToolResult.error(f"offset {first:,} is outside the result: it has {len(starts):,} lines (from 1)")
    budget = max(1, min(READ_TOKENS, max_tokens * 3 // 4))
    most = max(1, min(MAX_LIMIT, limit or DEFAULT_LIMIT))
    what = f"the result of call {call_id} ({header.get('tool')}, {len(starts):,} lines)"
    if not pattern:
        lines = [f"{n}:{_line(text, starts, n)}" for n in range(first, min(len(starts), first + most - 1) + 1)]
        shown = _fit(lines, budget)
        last = first + shown - 1
        more = f"[next: offset={last + 1}]" if last < len(starts) else "[end of the result]"
        return ToolResult("\n".join([f"[{what}: lines {first:,}-{last:,}]", *lines[:shown], more]))
    try:
        matched, finished = _matches(compile_pattern(pattern), text, starts, first, most)
    except PatternError as exc:
        return ToolResult.error(f"pattern {pattern!r} cannot be used: {exc}")
    except TimeoutError:
        return ToolResult.error(
            f"pattern {pattern!r} ran for more than {PATTERN_SECONDS:g} s on this result (it backtracks too "
            "much) and was stopped; try a simpler one (a literal word, a narrower class than .*)"
        )
    if not matched:
        return ToolResult(f"[{what}: no line from {first:,} on matches {pattern!r}]")
    lines, numbers = _with_context(text, starts, matched)
    shown = _fit(lines, budget)
    more_from = None
    if shown < len(lines) or not finished:  # past the last line read (a line of context may match too)
        more_from = min(numbers[shown - 1], matched[-1]) + 1
    footer = f"[more may match from line {more_from:,}: the same pattern with offset={more_from}]" if more_from else ""
    head = f"[{what}: lines matching {pattern!r} from line {first:,}, with {CONTEXT} lines around each]"
    return ToolResult("\n".join([head, *lines[:shown], *([footer] if footer else [])]))


def _line(text: str, starts: list[int], number: int) -> str:
    start = starts[number - 1]
    end = starts[number] if number < len(starts) else len(text)
    return text[start:end].removesuffix("\n")


def _matches(
    pattern: regex.Pattern[str], text: str, starts: list[int], first: int, most: int
) -> tuple[list[int], bool]:
    """The numbers of the lines from ``first`` the pattern matches (at most ``most``), and
    whether the search reached the end. One search per matching line: the search goes on
    from the next line, so a pattern that matches everywhere costs what it shows."""
    deadline = time.monotonic() + PATTERN_SECONDS
    pos = starts[first - 1] if starts else 0
    matched: list[int] = []
    while len(matched) < most:
        left = deadline - time.monotonic()
        if left <= 0:
            raise TimeoutError
        m = pattern.search(text, pos, timeout=left, concurrent=True)
        if m is None:
            return matched, True
        line, last = line_at(starts, m.start()), line_at(starts, max(m.start(), m.end() - 1))
        start = max(line, matched[-1] + 1) if matched else line
        matched.extend(range(start, last + 1))
        if last >= len(starts):
            return matched, True
        pos = starts[last]
    return matched[:most], False


def _with_context(text: str, starts: list[int], matched: list[int]) -> tuple[list[str], list[int]]:
    """The matching lines and ``CONTEXT`` lines around each, as ``grep -n -C`` writes them,
    and the number of the line each output line shows (that of the line before, for ``--``)."""
    hits = set(matched)
    out: list[str] = []
    numbers: list[int] = []
    last = 0
    for n in matched:
        low, high = max(1, n - CONTEXT, last + 1), min(len(starts), n + CONTEXT)
        if out and low > last + 1:
            out.append("--")
            numbers.append(last)
        for k in range(low, high + 1):
            out.append(f"{k}{':' if k in hits else '-'}{_line(text, starts, k)}")
            numbers.append(k)
        last = max(last, high)
    return out, numbers


def _fit(lines: list[str], budget: int) -> int:
    """How many of ``lines`` fit in ``budget`` tokens (at least one: a line is at most
    ``LINE_CHARS`` characters)."""
    chars, n = 0, 0
    for line in lines:  # a first guess by characters, then counted
        chars += len(line) + 1
        if chars > budget * 4 and n:
            break
        n += 1
    while n > 1 and count_tokens_upto("\n".join(lines[:n]), budget) is None:
        n = max(1, n * 3 // 4)
    return n
