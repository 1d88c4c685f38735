"""Token counts: exact o200k BPE counts (offline) of texts of any size, bounded counts and
token-bounded prefixes and suffixes, and the chars/4 heuristic where a published formula
asks for it.

The encoder refuses a text of 1,000,000 characters or more, and one that yields more than
200,000 tokens. Longer texts are counted in pieces of at most ``PIECE_CHARS`` characters,
cut where the encoder's pre-tokenizer always starts a new pre-token (see ``_SAFE_CUT``): BPE
never merges across pre-tokens, so the pieces' counts add up to the whole text's count
exactly. Only a stretch of ``PIECE_CHARS // 2`` characters with no such place in it (no
blank, no line start, no change between letters and digits: ``"a" * 50_000`` say) is cut
anywhere; each such cut may move the count by a token or two (a run of blanks cut in
two is split into pre-tokens differently on each side), and a text the encoder can
count whole (under 1,000,000 characters and 200,000 tokens) is then counted whole, so its
count stays exact.

The encoder is bpe_openai's compiled Rust core, loaded on its own (about 0.05 s): the
package's Python layer reads and tables every vocabulary when imported (about 0.5 s and
140 MB), for a tiktoken interface greenroom does not use. ``greenroom.tokens.encoder`` keeps that
layer's counting rules (its limits, its repair of lone surrogates), so counts are the same.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import attrs

from greenroom._support.compact import compact_json, plain
from greenroom.tokens.encoder import WHOLE_CHARS, Encoder
from greenroom.tools import ToolDescriptor

ENCODING = "o200k_base"

PIECE_CHARS = 50_000
"""The most characters given to the encoder at once. A character is at most 4 UTF-8 bytes
and no token is shorter than a byte, so a piece yields at most 200,000 tokens: the
encoder's own limit."""

_WHOLE_CHARS = WHOLE_CHARS
"""The encoder refuses texts of this many characters or more."""

_SAFE_CUT = re.compile(
    # Places where every o200k pre-token ends, whatever surrounds them: no pre-token holds
    # a line break followed by a non-blank other than "/", a non-blank followed by a space
    # or tab, or a change between an ASCII letter and a digit or a punctuation mark (the
    # apostrophe excepted: it starts the contractions "'s", "'ll" ... of a word).
    r"(?<=\n)(?=[^\s/])"
    r"|(?<=\S)(?=[ \t])"
    r"|(?<=[A-Za-z])(?=[0-9!-&(-/:-@\[-`{-~])"
    r"|(?<=[0-9])(?=[A-Za-z])"
)

_SEARCH_WINDOW = 512
"""Safe cuts are looked for in windows of this many characters, nearest first, so finding
one costs a few hundred characters of scanning, not a whole piece's."""


@functools.lru_cache(maxsize=4)
def _encoding(name: str) -> Encoder:
    return Encoder(name)


def _encode(piece: str, encoding: str) -> list[int]:
    return _encoding(encoding).encode(piece)


def _count_piece(piece: str, encoding: str) -> int:
    return _encoding(encoding).count(piece)


def _is_surrogate_pair(text: str, at: int) -> bool:
    # the encoder joins a high and a low surrogate into one character: never cut between them
    return 0 < at < len(text) and "\ud800" <= text[at - 1] <= "\udbff" and "\udc00" <= text[at] <= "\udfff"


def _last_safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The last safe cut in ``(lo, hi]``, or None."""
    w_hi = hi
    while w_hi > lo:
        w_lo = max(lo + 1, w_hi - _SEARCH_WINDOW)
        # one character past the window, so the lookahead sees what follows a cut at w_hi
        found = [m.start() for m in _SAFE_CUT.finditer(text, w_lo, min(w_hi + 1, len(text)))]
        found = [at for at in found if at <= w_hi]
        if found:
            return found[-1]
        w_hi = w_lo - 1
    return None


def _first_safe_cut(text: str, lo: int, hi: int) -> int | None:
    """The first safe cut in ``[lo, hi)``, or None."""
    w_lo = lo
    while w_lo < hi:
        w_hi = min(hi, w_lo + _SEARCH_WINDOW)
        m = _SAFE_CUT.search(text, w_lo, min(w_hi + 1, len(text)))
        if m is not None and m.start() < w_hi:
            return m.start()
        w_lo = w_hi
    return None


def _piece_end(text: str, start: int, size: int) -> tuple[int, bool]:
    """Where the piece that starts at ``start`` ends (at most ``size`` characters on), and
    whether the cut there keeps counts exact."""
    end = start + size
    if end >= len(text):
        return len(text), True
    cut = _last_safe_cut(text, start + size // 2, end)
    if cut is not None:
        return cut, True
    return (end - 1 if _is_surrogate_pair(text, end) else end), False


def _piece_start(text: str, end: int, size: int) -> tuple[int, bool]:
    """Where the piece that ends at ``end`` starts (at most ``size`` characters back)."""
    start = end - size
    if start <= 0:
        return 0, True
    cut = _first_safe_cut(text, start, end - size // 2)
    if cut is not None:
        return cut, True
    return (start + 1 if _is_surrogate_pair(text, start) else start), False


def _pieces(text: str, size: int = PIECE_CHARS) -> Iterable[tuple[str, bool]]:
    """``text`` in pieces of at most ``size`` characters, each with whether its end is a safe cut."""
    start = 0
    while start < len(text):
        end, safe = _piece_end(text, start, size)
        yield text[start:end], safe
        start = end


def count_tokens(text: str, encoding: str = ENCODING) -> int:
    """Exact token count of ``text`` under an OpenAI encoding, whatever its length (see the
    module's docstring for the one case that may be off by a token or two per cut)."""
    if not text:
        return 0
    if len(text) <= PIECE_CHARS:
        return _count_piece(text, encoding)
    total = 0
    exact = True
    for piece, safe in _pieces(text):
        total += _count_piece(piece, encoding)
        exact = exact and safe
    if not exact and len(text) < _WHOLE_CHARS:
        try:
            return _count_piece(text, encoding)
        except ValueError:  # over the encoder's 200,000 tokens: the pieces' sum it is
            pass
    return total


def count_tokens_upto(text: str, limit: int, encoding: str = ENCODING) -> int | None:
    """The token count of ``text`` when it is at most ``limit``; None when it is more.

    Counts piece by piece and stops at the piece that passes ``limit``, so the work is
    bounded by the limit (about ``limit`` tokens of text, and one piece), not by the text:
    use it wherever a bound is all that is needed.
    """
    if not text:
        return 0
    total = 0
    start = 0
    while start < len(text):
        end, _ = _piece_end(text, start, _piece_size(limit - total))
        total += _count_piece(text[start:end], encoding)
        if total > limit:
            return None
        start = end
    return total


def surely_within(text: str, limit: int) -> bool:
    """Whether ``text`` surely counts at most ``limit`` tokens, known without counting:
    every token spells at least one UTF-8 byte, so a text of at most ``limit`` bytes is
    within (False only means it has to be counted)."""
    # a character is at most 4 bytes: most texts are settled without encoding them
    return len(text) * 4 <= limit or (len(text) <= limit and len(text.encode("utf-8", "surrogatepass")) <= limit)


def _piece_size(tokens_left: int) -> int:
    # a token is rarely over 8 characters: a piece this size usually settles the question
    return max(1024, min(PIECE_CHARS, 8 * (tokens_left + 1)))


def _decoded_chars(tokens: list[int], encoding: str) -> int:
    """Characters of the text ``tokens`` spell; a character cut in two by the token
    boundary is not counted."""
    return _encoding(encoding).decoded_chars(tokens)


def prefix_within(text: str, budget: int, encoding: str = ENCODING) -> tuple[int, int]:
    """``(end, tokens)``: ``text[:end]`` is the longest prefix found that counts at most
    ``budget`` tokens (it has ``tokens``). Reads only as far as the budget reaches."""
    counted = 0
    start = 0
    while start < len(text):
        end, _ = _piece_end(text, start, _piece_size(budget - counted))
        tokens = _encode(text[start:end], encoding)
        if counted + len(tokens) > budget:
            return _settle(_KeepFirst(text, start, tokens, budget, encoding), budget - counted, (start, counted))
        counted += len(tokens)
        start = end
    return len(text), counted


def suffix_within(text: str, budget: int, encoding: str = ENCODING) -> tuple[int, int]:
    """``(start, tokens)``: ``text[start:]`` is the longest suffix found that counts at most
    ``budget`` tokens (it has ``tokens``). Reads only as far back as the budget reaches."""
    counted = 0
    end = len(text)
    while end > 0:
        start, _ = _piece_start(text, end, _piece_size(budget - counted))
        tokens = _encode(text[start:end], encoding)
        if counted + len(tokens) > budget:
            return _settle(_KeepLast(text, end, tokens, budget, encoding), budget - counted, (end, counted))
        counted += len(tokens)
        end = start
    return 0, counted


@attrs.frozen
class _KeepFirst:
    """The cut after the first ``n`` tokens of the piece at ``start``, and the prefix's count."""

    text: str
    start: int
    tokens: list[int]
    budget: int
    encoding: str

    def __call__(self, n: int) -> tuple[int, int | None]:
        at = self.start + _decoded_chars(self.tokens[:n], self.encoding)
        return at, count_tokens_upto(self.text[:at], self.budget, self.encoding)


@attrs.frozen
class _KeepLast:
    """The cut before the last ``n`` tokens of the piece ending at ``end``, and the suffix's count."""

    text: str
    end: int
    tokens: list[int]
    budget: int
    encoding: str

    def __call__(self, n: int) -> tuple[int, int | None]:
        at = self.end - _decoded_chars(self.tokens[len(self.tokens) - n :], self.encoding)
        return at, count_tokens_upto(self.text[at:], self.budget, self.encoding)


def _settle(keep: Callable[[int], tuple[int, int | None]], n: int, edge: tuple[int, int]) -> tuple[int, int]:
    """The cut inside the piece that passes the budget: keep ``n`` of its tokens, checked by
    a recount (a cut inside a pre-token can re-encode to more tokens), a few fewer when
    that is over, and at last the piece's edge (already counted, within the budget)."""
    for _ in range(4):
        if n <= 0:
            break
        at, got = keep(n)
        if got is not None:
            return at, got
        n -= 1 + n // 16
    return edge


def tool_json(tool: ToolDescriptor) -> str:
    return compact_json(tool.to_json())


@functools.lru_cache(maxsize=65536)
def _tool_tokens(text: str) -> int:
    return count_tokens(text)


def tool_tokens(tool: ToolDescriptor) -> int:
    """Tokens of one tool definition as sent in a tools array (cached per definition)."""
    return _tool_tokens(tool_json(tool))


def tools_tokens(tools: Iterable[ToolDescriptor]) -> int:
    return sum(tool_tokens(t) for t in tools)


def chars4(text: str) -> int:
    """The character heuristic: len/4, used where a reference formula is defined by it."""
    return len(text) // 4


def parameters_json(parameters: Mapping[str, Any]) -> str:
    return json.dumps(parameters, separators=(",", ":"), ensure_ascii=False, default=plain)
