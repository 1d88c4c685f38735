"""Which texts of a catalog contain a substring: the keyword ranker's and ``+required``'s index.

A query term never holds whitespace, so it is in a text exactly when it is in one of the
text's whitespace-separated chunks. The index keeps each distinct chunk once with the
texts it occurs in (postings), and a suffix table over the chunks' UTF-8 bytes: every
suffix keyed by its first 8 bytes, sorted. A term is then two binary searches (plus a
byte comparison for terms over 8 bytes) and a gather of postings, never a loop over the
catalog or a scan of its text. UTF-8 matches only at character boundaries, so byte hits
are exactly the string hits.

Everything an index holds is arrays (``to_arrays`` / ``from_arrays``), so it is cached on
disk and read back without any per-text work.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import chain

import numpy as np

_KEY = 8  # bytes of each suffix in its sort key
_NL = 10  # b"\n", the chunk separator
_FIELDS = ("size", "data", "keys", "position", "chunk", "offsets", "postings")


def _utf8(text: str) -> bytes:
    # lone surrogates (a file name that was not UTF-8) survive the round trip
    return text.encode("utf-8", "surrogatepass")


def _keys(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The big-endian first ``_KEY`` bytes of each suffix as one unsigned integer."""
    padded = np.concatenate([data, np.zeros(_KEY, dtype=np.uint8)])
    keys = np.zeros(len(positions), dtype=np.uint64)
    for j in range(_KEY):
        keys |= padded[positions + j].astype(np.uint64) << np.uint64(8 * (_KEY - 1 - j))
    return keys


class SubstringIndex:
    """Which of ``size`` texts contain a substring (see the module doc).

    ``data`` is the chunks' UTF-8 bytes, each followed by ``\\n``; ``keys`` the sorted
    suffix keys, with each suffix's byte ``position`` and ``chunk``; the postings of
    chunk ``c`` are ``postings[offsets[c]:offsets[c + 1]]``.
    """

    def __init__(
        self,
        size: int,
        data: np.ndarray,
        keys: np.ndarray,
        position: np.ndarray,
        chunk: np.ndarray,
        offsets: np.ndarray,
        postings: np.ndarray,
    ) -> None:
        self.size = size
        self.data = data
        self.keys = keys
        self.position = position
        self.chunk = chunk
        self.offsets = offsets
        self.postings = postings

    @classmethod
    def build(cls, texts: Sequence[str]) -> SubstringIndex:
        postings: dict[str, list[int]] = {}
        for i, text in enumerate(texts):
            for piece in dict.fromkeys(text.split()):
                got = postings.get(piece)
                if got is None:
                    postings[piece] = [i]
                else:
                    got.append(i)
        sizes = np.fromiter(map(len, postings.values()), dtype=np.int64, count=len(postings))
        offsets = np.concatenate([np.zeros(1, np.int64), np.cumsum(sizes)])
        flat = np.fromiter(chain.from_iterable(postings.values()), dtype=np.int32, count=int(offsets[-1]))
        blob = "".join(f"{c}\n" for c in postings)
        data = np.frombuffer(_utf8(blob), dtype=np.uint8)
        inside = data != _NL
        chunk_of = np.cumsum(~inside) - ~inside  # separators before each byte
        positions = np.flatnonzero(inside)
        keys = _keys(data, positions)
        order = np.argsort(keys, kind="stable")
        wide = np.int64 if len(data) >= 2**31 else np.int32
        return cls(
            len(texts),
            data,
            keys[order],
            positions[order].astype(wide),
            chunk_of[positions[order]].astype(np.int32),
            offsets,
            flat,
        )

    # ------------------------------------------------------------------ storing
    def to_arrays(self, prefix: str) -> dict[str, np.ndarray]:
        values = (np.asarray([self.size], dtype=np.int64), self.data, self.keys, self.position, self.chunk)
        return {f"{prefix}.{k}": v for k, v in zip(_FIELDS, (*values, self.offsets, self.postings), strict=True)}

    @classmethod
    def from_arrays(cls, arrays: Mapping[str, np.ndarray], prefix: str) -> SubstringIndex:
        """The index ``to_arrays`` stored; ValueError when its arrays do not fit together
        (a damaged file must not answer wrongly, or crash a search later)."""
        size, data, keys, position, chunk, offsets, postings = (arrays[f"{prefix}.{k}"] for k in _FIELDS)
        n = int(size[0])
        chunks = int((data == _NL).sum())
        suffixes = len(data) - chunks
        if data.dtype != np.uint8 or keys.dtype != np.uint64 or (len(data) and data[-1] != _NL):
            raise ValueError("vocabulary bytes are malformed")
        if not (len(keys) == len(position) == len(chunk) == suffixes) or len(offsets) != chunks + 1:
            raise ValueError("suffix table does not match the vocabulary")
        if offsets[0] != 0 or int(offsets[-1]) != len(postings) or np.any(np.diff(offsets) < 0):
            raise ValueError("postings do not match the vocabulary")
        for values, bound in ((postings, n), (chunk, chunks), (position, len(data))):
            if len(values) and (int(values.min()) < 0 or int(values.max()) >= bound):
                raise ValueError("an index points out of range")
        return cls(n, data, keys, position, chunk, offsets, postings)

    # ------------------------------------------------------------------ searching
    def _suffixes(self, raw: bytes) -> np.ndarray:
        """Indexes into the suffix table of the suffixes starting with ``raw``."""
        if not raw or not len(self.keys):
            return np.zeros(0, dtype=np.int64)
        head = raw[:_KEY]
        lo = int(self.keys.searchsorted(np.uint64(int.from_bytes(head.ljust(_KEY, b"\x00"), "big")), "left"))
        hi = int(self.keys.searchsorted(np.uint64(int.from_bytes(head.ljust(_KEY, b"\xff"), "big")), "right"))
        found = np.arange(lo, hi)
        if len(raw) > _KEY and found.size:
            # the key holds 8 bytes: compare the rest; reading past the end finds the
            # final separator, which no term holds
            rest = np.frombuffer(raw[_KEY:], dtype=np.uint8)
            where = np.minimum(self.position[lo:hi, None] + np.arange(_KEY, len(raw)), len(self.data) - 1)
            found = found[(self.data[where] == rest).all(axis=1)]
        return found

    def chunks(self, term: str) -> np.ndarray:
        """Ids of the vocabulary chunks containing ``term`` (ascending, unique)."""
        return np.unique(self.chunk[self._suffixes(_utf8(term))])

    def exact_chunk(self, piece: str) -> int | None:
        """The id of the chunk that is exactly ``piece``, if there is one."""
        found = self._suffixes(_utf8(piece) + b"\n")
        starts = self.position[found]
        at_start = found[(starts == 0) | (self.data[np.maximum(starts - 1, 0)] == _NL)]
        return int(self.chunk[at_start[0]]) if at_start.size else None

    def postings_of(self, chunk: int) -> np.ndarray:
        return self.postings[int(self.offsets[chunk]) : int(self.offsets[chunk + 1])]

    def ids(self, term: str) -> np.ndarray:
        """Ids of the texts containing ``term`` (ascending, unique)."""
        chunks = self.chunks(term)
        if chunks.size == 0:
            return np.zeros(0, dtype=np.int64)
        lo, hi = self.offsets[chunks], self.offsets[chunks + 1]
        if chunks.size == 1:
            return self.postings[int(lo[0]) : int(hi[0])].astype(np.int64)  # ascending and unique
        lengths = hi - lo
        # gather every posting range [lo, hi) at once
        index = np.repeat(lo - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
        texts = self.postings[index]
        if texts.size * 8 < self.size:
            return np.unique(texts).astype(np.int64)
        seen = np.zeros(self.size, dtype=bool)
        seen[texts] = True
        return np.flatnonzero(seen)
