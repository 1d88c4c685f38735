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

import sys
from collections.abc import Iterable, Mapping, Sequence
from itertools import count, islice

import numpy as np

_KEY = 8  # bytes of each suffix in its sort key
_NL = 10  # b"\n", the chunk separator
_TOP_KEY = 2**64 - 1
_FEW = 16  # chunks whose postings are gathered one slice at a time
_FEW_IDS = 256  # ids few enough to merge in Python
_BATCH = 4096  # texts split into chunks at once
_FIELDS = ("size", "data", "keys", "position", "chunk", "offsets", "postings")


def _utf8(text: str) -> bytes:
    # lone surrogates (a file name that was not UTF-8) survive the round trip
    return text.encode("utf-8", "surrogatepass")


def _keys(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """The big-endian first ``_KEY`` bytes of each suffix as one unsigned integer: read
    through a view of 8-byte big-endian words at every byte offset, so the only array of
    keys' size made is the keys."""
    padded = np.concatenate([data, np.zeros(_KEY, dtype=np.uint8)])
    words = np.ndarray((len(data),), dtype=">u8", buffer=padded, strides=(1,))
    keys = words[positions]
    keys.byteswap(inplace=True)
    return keys.view(np.uint64)


def _suffix_order(data: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """``positions`` (ascending) sorted by their suffixes' keys, equal keys in position
    order: ``positions[np.argsort(_keys(data, positions), kind="stable")]``.

    Sorted as ``stable_order`` sorts, a 16-bit digit of the key at a time, lowest first,
    but each digit is gathered at the positions from the text's bytes read 2 at a time
    (2 bytes a byte of text, where keys take 8 a suffix), and the positions themselves
    are carried from pass to pass in place of an order (4 bytes each, where indexes
    take 8): no array of keys is made until the sorted one."""
    padded = np.concatenate([data, np.zeros(_KEY, dtype=np.uint8)])
    for offset in range(_KEY - 2, -1, -2):
        # the big-endian 2 bytes at each byte offset + ``offset``: this digit of every suffix
        digit = np.ndarray((len(data),), dtype=">u2", buffer=padded, offset=offset, strides=(1,))
        positions = positions.take(np.argsort(digit.astype(np.uint16).take(positions), kind="stable"))
    return positions


def stable_order(values: np.ndarray, bound: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of non-negative integer ``values`` below
    ``bound`` (at most ``2**64``). numpy sorts 16-bit values by radix, several times
    faster than its stable sort of wider ones, so wider values are sorted a 16-bit digit
    at a time, lowest first: each pass is stable, so values equal in the digits sorted
    so far keep their order, and the last pass leaves them in order of the whole value
    with ties in their first order, as one stable sort does."""
    if bound <= 2**16 or values.dtype.itemsize <= 2:  # a value of 2 bytes or less is below 2**16
        return np.argsort(values.astype(np.uint16), kind="stable")
    native = np.ascontiguousarray(values, dtype=values.dtype.newbyteorder("="))
    digits = native.view(np.uint16).reshape(len(native), native.itemsize // 2)  # a view, no copy
    if sys.byteorder == "big":
        digits = digits[:, ::-1]
    needed = min(-(-(int(bound) - 1).bit_length() // 16), digits.shape[1])
    order = np.argsort(digits[:, 0], kind="stable")
    for j in range(1, needed):
        # take, not fancy indexing: the same gather in half the time
        order = order.take(np.argsort(digits[:, j].take(order), kind="stable"))
    return order


class _Ids(dict[str, int]):
    """Ids in order of first sight: a key not seen before gets the next one on lookup
    (counted apart from ``len``: a batch's separator is a key while the batch is looked up)."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def __missing__(self, key: str) -> int:
        self[key] = got = self.count
        self.count = got + 1
        return got


def _batch_chunks(batch: list[str], ids: _Ids) -> np.ndarray:
    """The ids of the chunks of ``batch``'s texts, text after text, each text's chunks in
    order (repeats kept), with -1 between two texts; chunks not seen before get ids.

    The texts are split in one call: joined with a separator ``mark`` between spaces, a
    string in no text of the batch (so no chunk is or holds it) and no chunk seen before.
    ``str.split`` then gives each text's chunks exactly as splitting it alone would (the
    spaces end a chunk whatever whitespace the text ends or starts with), with ``mark``
    between two texts, and ``mark`` is looked up as -1. ``count`` proves ``mark`` is in
    no text: every separator holds it once and, with no whitespace in it, no occurrence
    can reach across a space into a text. A longer run of NULs is tried until one fits."""
    for width in count(1):
        mark = "\x00" * width
        if mark not in ids:
            joined = f" {mark} ".join(batch)
            if joined.count(mark) == len(batch) - 1:
                break
    chunks = joined.split()
    del joined
    ids[mark] = -1
    found = np.fromiter(map(ids.__getitem__, chunks), dtype=np.int32, count=len(chunks))
    del ids[mark]
    return found


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
    def build(cls, texts: Iterable[str]) -> SubstringIndex:
        """The index of ``texts``, read once, ``_BATCH`` at a time."""
        ids = _Ids()  # each distinct chunk, in order of first sight
        chunk_parts: list[np.ndarray] = []  # per batch: each chunk occurrence's chunk...
        text_parts: list[np.ndarray] = []  # ...and text
        size = 0
        source = iter(texts)
        while batch := list(islice(source, _BATCH)):
            found = _batch_chunks(batch, ids)
            between = found < 0
            text = np.cumsum(between, dtype=np.int32)  # the separators before a chunk: its text
            text += size
            chunk_parts.append(found[~between])
            text_parts.append(text[~between])
            size += len(batch)
            del batch, found, between, text
        pair_chunk = np.concatenate(chunk_parts) if chunk_parts else np.zeros(0, np.int32)
        pair_text = np.concatenate(text_parts) if text_parts else np.zeros(0, np.int32)
        del chunk_parts, text_parts
        # postings grouped by chunk, texts ascending within each (a stable sort keeps them
        # so), a chunk's repeats in one text side by side and dropped: 4 bytes a posting
        order = stable_order(pair_chunk, ids.count)
        pair_chunk = pair_chunk.take(order)
        pair_text = pair_text.take(order)
        del order
        fresh = np.ones(len(pair_chunk), dtype=bool)
        np.not_equal(pair_text[1:], pair_text[:-1], out=fresh[1:])
        fresh[1:] |= pair_chunk[1:] != pair_chunk[:-1]
        flat = pair_text[fresh]
        del pair_text
        pair_chunk = pair_chunk[fresh]
        del fresh
        # where each chunk's postings start (a bincount would copy the chunks to 8 bytes each)
        offsets = pair_chunk.searchsorted(np.arange(ids.count + 1, dtype=pair_chunk.dtype))
        del pair_chunk
        chunks = list(ids)
        del ids
        data = np.frombuffer(_utf8("\n".join([*chunks, ""])), dtype=np.uint8)  # each chunk and "\n"
        del chunks
        # arrays of one element per byte, as narrow as they can be and dropped as soon as
        # done with: the names of 100,000 tools are about 2.3 million bytes
        wide = np.int64 if len(data) >= 2**31 else np.int32
        inside = data != _NL
        positions = _suffix_order(data, np.flatnonzero(inside).astype(wide))
        keys = _keys(data, positions)
        chunk_of = np.cumsum(~inside, dtype=np.int32)  # a suffix's separators before it: its chunk
        del inside
        chunk = chunk_of.take(positions)
        del chunk_of
        return cls(size, data, keys, positions, chunk, offsets, flat)

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
    def _range(self, raw: bytes) -> tuple[int, int, np.ndarray | None]:
        """The suffix table's rows ``lo:hi`` whose keys start as ``raw`` does, and of
        those, the ones that start with all of ``raw`` (None: all of them)."""
        if not raw or not len(self.keys):
            return 0, 0, None
        head = raw[:_KEY]
        low = int.from_bytes(head.ljust(_KEY, b"\x00"), "big")
        high = int.from_bytes(head.ljust(_KEY, b"\xff"), "big")
        if high < _TOP_KEY:
            # one search for both ends: the rows after the last key <= high start at high + 1
            lo, hi = self.keys.searchsorted(np.asarray([low, high + 1], dtype=np.uint64)).tolist()
        else:
            lo, hi = int(self.keys.searchsorted(np.uint64(low))), len(self.keys)
        if len(raw) <= _KEY or lo == hi:
            return lo, hi, None
        return lo, hi, self._rest_matches(self.position[lo:hi], raw)

    def _rest_matches(self, positions: np.ndarray, raw: bytes) -> np.ndarray:
        """Which suffixes at ``positions`` (their first 8 bytes known to match) go on as
        ``raw`` does; reading past the end finds the final separator, which no term holds."""
        rest = np.frombuffer(raw[_KEY:], dtype=np.uint8)
        where = np.minimum(positions[:, None] + np.arange(_KEY, len(raw)), len(self.data) - 1)
        return (self.data[where] == rest).all(axis=1)

    def _suffixes(self, raw: bytes) -> np.ndarray:
        """Indexes into the suffix table of the suffixes starting with ``raw``."""
        lo, hi, match = self._range(raw)
        found = np.arange(lo, hi)
        return found if match is None else found[match]

    def chunks(self, term: str) -> np.ndarray:
        """Ids of the vocabulary chunks containing ``term`` (ascending, unique)."""
        return np.unique(self.chunk[self._suffixes(_utf8(term))])

    def exact_chunk(self, piece: str) -> int | None:
        """The id of the chunk that is exactly ``piece``, if there is one."""
        lo, hi, match = self._range(_utf8(piece) + b"\n")
        if lo == hi:  # the usual answer: no chunk even starts so
            return None
        found = np.arange(lo, hi) if match is None else np.arange(lo, hi)[match]
        starts = self.position[found]
        at_start = found[(starts == 0) | (self.data[np.maximum(starts - 1, 0)] == _NL)]
        return int(self.chunk[at_start[0]]) if at_start.size else None

    def postings_of(self, chunk: int) -> np.ndarray:
        return self.postings[int(self.offsets[chunk]) : int(self.offsets[chunk + 1])]

    def ids(self, term: str) -> np.ndarray:
        """Ids of the texts containing ``term`` (ascending, unique)."""
        return self._ids_in(*self._range(_utf8(term)))

    def ids_many(self, terms: Sequence[str]) -> list[np.ndarray]:
        """``ids`` of each term; one search of the suffix table for all of them."""
        count = len(terms)
        if not count or not len(self.keys):
            return [np.zeros(0, dtype=np.int64) for _ in terms]
        raws = [_utf8(t) for t in terms]
        heads = [r[:_KEY] for r in raws]
        # UTF-8 never holds the byte 0xff: a term's highest key is below the top one
        lows = [int.from_bytes(h.ljust(_KEY, b"\x00"), "big") for h in heads]
        highs = [min(int.from_bytes(h.ljust(_KEY, b"\xff"), "big"), _TOP_KEY - 1) + 1 for h in heads]
        bounds = self.keys.searchsorted(np.asarray(lows + highs, dtype=np.uint64)).tolist()
        out: list[np.ndarray] = []
        for raw, lo, hi in zip(raws, bounds[:count], bounds[count:], strict=True):
            if not raw or lo == hi:  # most terms of a sentence are in no text of one field
                out.append(np.zeros(0, dtype=np.int64))
                continue
            match = self._rest_matches(self.position[lo:hi], raw) if len(raw) > _KEY else None
            out.append(self._ids_in(lo, hi, match))
        return out

    def _ids_in(self, lo: int, hi: int, match: np.ndarray | None) -> np.ndarray:
        """Ids of the texts holding the suffixes of rows ``lo:hi`` (those ``match`` keeps)."""
        chunks = self.chunk[lo:hi] if match is None else self.chunk[lo:hi][match]
        if chunks.size == 0:
            return np.zeros(0, dtype=np.int64)
        if chunks.size <= _FEW:
            # a few chunks: plain Python is cheaper than numpy's overhead per call
            offsets = self.offsets
            spans = [(int(offsets[c]), int(offsets[c + 1])) for c in set(chunks.tolist())]  # a chunk met twice
            if len(spans) == 1:
                return self.postings[spans[0][0] : spans[0][1]].astype(np.int64)
            if sum(end - start for start, end in spans) <= _FEW_IDS:
                hits: set[int] = set()
                for start, end in spans:
                    hits.update(self.postings[start:end].tolist())
                return np.fromiter(sorted(hits), dtype=np.int64, count=len(hits))
            texts = np.concatenate([self.postings[start:end] for start, end in spans])
        else:  # gather every posting range [start, end) at once; a chunk met twice only repeats texts
            starts, ends = self.offsets[chunks], self.offsets[chunks + 1]
            lengths = ends - starts
            index = np.repeat(starts - (np.cumsum(lengths) - lengths), lengths) + np.arange(int(lengths.sum()))
            texts = self.postings[index]
        if texts.size * 8 < self.size:
            # np.unique, without its overhead (several times the work on a few dozen ids)
            texts = np.sort(texts).astype(np.int64)
            fresh = np.empty(texts.size, dtype=bool)
            fresh[0] = True
            np.not_equal(texts[1:], texts[:-1], out=fresh[1:])
            return texts[fresh]
        seen = np.zeros(self.size, dtype=bool)
        seen[texts] = True
        return np.flatnonzero(seen)
