"""Token occurrences of tool fields, for the BM25F build (``analysis.fields``): the fields'
texts, ``BATCH`` tools at a time, cut into words at once (``cut``), each distinct word
analysed once (``analyze_chunks``), and every occurrence made a token id by numpy
indexing, so the Python work is per distinct word, not per word of the catalog.

Words and tokens get ids in order of first sight.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from itertools import islice
from typing import Any

import numpy as np

from greenroom_ranking.analysis.words import cut
from greenroom_ranking.text import analyze_chunks

BATCH = 2048
"""Tools whose texts are cut into words at once: the words of 100,000 tools as Python
strings would take about 240 MB, and would pin the memory of the strings kept among them."""


class _Ids(dict[bytes, int]):
    """Distinct words (chunks) by id in order of first sight: a word not seen before gets
    the next id on lookup, and waits in ``new`` for its analysis, so a batch's words
    become ids in one C-level pass."""

    def __init__(self) -> None:
        super().__init__({b"\x1f": 0})
        self.new: list[bytes] = []

    def __missing__(self, chunk: bytes) -> int:
        self[chunk] = got = len(self)
        self.new.append(chunk)
        return got


class Words:
    """Distinct words (chunks) in order of first sight, each analysed once, and the
    token ids their analysis gives (ids in order of first sight too)."""

    def __init__(self, dtype: type[np.signedinteger[Any]]) -> None:
        self.ids = _Ids()
        self.vocab: dict[str, int] = {}
        # per chunk, its tokens' count and where they start in ``tokens``: arrays grown
        # once per batch, as converting whole lists each batch grows with the catalog
        self.count = np.zeros(1, dtype=np.int64)  # the separator has none
        self.start = np.zeros(1, dtype=np.int64)
        self.tokens = np.zeros(0, dtype=dtype)

    def of(self, pieces: list[bytes]) -> np.ndarray:
        """The chunk id of each piece, the chunks first seen here analysed."""
        ids = np.fromiter(map(self.ids.__getitem__, pieces), dtype=np.int64, count=len(pieces))
        new, self.ids.new = self.ids.new, []
        if new:
            vocab = self.vocab
            # one string at a time, dropped once analysed: no copy of every new word held
            analysed = analyze_chunks((chunk.decode() for chunk in new), joined=True)
            count = np.fromiter(map(len, analysed), dtype=np.int64, count=len(analysed))
            total = int(count.sum())
            tokens = np.fromiter(
                (vocab.setdefault(t, len(vocab)) for chunk in analysed for t in chunk), dtype=np.int64, count=total
            )
            self.start = np.concatenate([self.start, self.tokens.size + np.cumsum(count) - count])
            self.count = np.concatenate([self.count, count])
            self.tokens = np.concatenate([self.tokens, tokens.astype(self.tokens.dtype)])
        return ids


def occurrences(fields: Iterable[Sequence[str]], width: int, words: Words) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """The occurrences of the tools whose field texts ``fields`` gives (``width`` each), in
    order, as per-batch arrays of slots (``tool * width + field``) and of token ids
    (``words``' ids, which it extends)."""
    wide = words.tokens.dtype.type
    slots: list[np.ndarray] = []
    tokens: list[np.ndarray] = []
    source = iter(fields)
    at_tool = 0
    while batch := list(islice(source, BATCH)):
        pieces = cut([text for texts in batch for text in texts])  # emptied
        ids = words.of(pieces)
        del pieces
        slot_of = np.cumsum(ids == 0, dtype=wide)  # each piece's text: the separators before it
        slot_of += at_tool * width
        count = words.count[ids]  # a separator has no tokens, so the repeats below drop it
        total = int(count.sum())
        starts = words.start[ids] - (np.cumsum(count) - count)
        at = np.repeat(starts, count) + np.arange(total, dtype=np.int64)
        tokens.append(words.tokens[at])
        slots.append(np.repeat(slot_of, count))
        at_tool += len(batch)
    return slots, tokens


__all__ = ["BATCH", "Words", "occurrences"]
