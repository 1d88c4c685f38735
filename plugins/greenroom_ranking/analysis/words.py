"""Tool texts cut into words (runs of letters and digits) for the BM25F build
(``analysis.fields``): ASCII text as bytes, in C, and other text by the regular
expression that defines a word, to the same words in the same order."""

from __future__ import annotations

import re

import numpy as np

SEPARATOR = "\x1f"  # the unit separator: no word character, and no tool text holds it in practice
_JOIN = " \x1f "  # spaced, so that the byte cut below, which splits at whitespace only, sees it alone
PIECES = re.compile(r"[^\W_]+|\x1f")
_ASCII_WORDS = bytes(c if chr(c).isalnum() or c == 0x1F else 0x20 for c in range(128)) + b" " * 128
"""Each byte of ASCII text as ``cut`` reads it: letters, digits and the separator kept, any
other byte a space. ``bytes.split`` splits at ASCII whitespace only, never at the
separator (``str.split`` would), so the separator stays a piece of its own."""


def cut(texts: list[str]) -> list[bytes]:
    """The words of ``texts``, which it empties, in order, UTF-8 encoded, with
    ``b"\\x1f"`` between texts: ``PIECES.findall`` of the texts joined by the separator
    (any separator in a text read as a space). The texts are dropped once joined, before
    the words are made, as one string of them all was before.

    ASCII text, nearly all of a catalog, is cut as bytes: one ``bytes.translate`` and one
    ``bytes.split`` in C, about four times faster than the regular expression. A text
    with other characters takes the regular expression, whose ``[^\\W_]`` knows which
    are letters and digits in Unicode; texts keep their order, so words are first seen
    in the same order either way."""
    joined = _JOIN.join(texts)
    if joined.count(SEPARATOR) != len(texts) - 1:  # a text held one: each is cleaned
        joined = _JOIN.join([t.replace(SEPARATOR, " ") for t in texts])
    texts.clear()
    if joined.isascii():  # O(1) for a str
        data = joined.encode("ascii")
        del joined
        return data.translate(_ASCII_WORDS).split()
    # one byte a character, any other than ASCII a "?": so the bytes of each text are
    # where its characters are (a UTF-8 encoding would first take up to four times the
    # text's size, a step up in the build's memory for nothing)
    data = joined.encode("ascii", "replace")
    octets = np.frombuffer(data, dtype=np.uint8)
    ends = np.flatnonzero(octets == 0x1F)  # where each text but the last ends
    # the texts with a "?": those with other characters, and the few that ask a question
    marked = np.unique(np.searchsorted(ends, np.flatnonzero(octets == 0x3F)))
    del octets
    others: list[tuple[int, int, str]] = []
    for i in marked.tolist():
        begin = int(ends[i - 1]) + 1 if i else 0
        end = int(ends[i]) if i < ends.size else len(data)
        text = joined[begin:end]
        if not text.isascii():
            others.append((begin, end, text))
    del joined
    pieces: list[bytes] = []
    at = 0  # the start of the bytes not cut yet: ASCII up to the next text with others
    for begin, end, text in others:
        pieces += data[at:begin].translate(_ASCII_WORDS).split()  # ends with the text's separator
        pieces += [word.encode() for word in PIECES.findall(text)]  # a word holds no lone surrogate
        at = end
    pieces += data[at:].translate(_ASCII_WORDS).split()
    return pieces
