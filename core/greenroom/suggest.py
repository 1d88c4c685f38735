"""Did you mean: the tool names closest to one that does not exist, in bounded work at any
catalog size.

``difflib.get_close_matches`` scores every name (20 ms at 10k names, 70 ms at 50k). A
``NameIndex`` keeps the names lower-cased and sorted, forwards and spelt backwards: the
names that share the longest beginning or end with a typed name sit next to where it would
be sorted in, so a few binary searches find the obvious mistakes whatever the catalog's size:

- a different case: the same lower-cased name;
- one or two edits: the part before the first edit or after the last one is shared (two
  edits, one near each end of a long name, can be missed);
- a ``server__`` prefix dropped, added or misspelt: the rest of the name is shared at its end;
- words in another order: each order of the words (with the typed prefix, and without) is
  looked up too.

At most ``MAX_SCORED`` of the names found get the costly similarity score, and only the
first ``MAX_NAME`` characters of a name are compared. ``close_names`` keeps the index of the
last pool it was given; a holder of a catalog can keep its own ``NameIndex``.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from itertools import permutations
from operator import itemgetter

from greenroom.memo import IdentityMemo
from greenroom.tools import ToolDescriptor

MAX_NAME = 128
"""Characters of a name compared; tool names are at most 64 (the providers' limit)."""

MAX_SCORED = 32
"""The most names given the similarity score for one typed name."""

CUTOFF = 0.6
"""The least similarity of a suggestion (difflib's default)."""

NEIGHBOURS = 6
"""Names read on each side of where a probe sorts in."""

MAX_PROBES = 40
"""The most binary searches for one typed name (itself and its words in other orders, each
forwards and backwards)."""

_PREFIX = "__"  # server__tool, as greenroom names MCP tools
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\dA-Za-z_]+")
_MAX_ORDERED = 3  # words whose every order is tried; more are only rotated
_MAX_WORDS = 6  # a longer name is not looked up in other orders
_BACKWARDS = itemgetter(slice(None, None, -1))


class NameIndex:
    """Names sorted by their lower-cased spelling, forwards and backwards. Building it sorts
    the names twice (about 0.1 s at 100,000 names); a lookup is a few binary searches."""

    def __init__(self, names: Iterable[str]) -> None:
        self.names = list(names)
        lowered = list(map(str.lower, self.names))
        backwards = list(map(_BACKWARDS, lowered))
        self._forwards = _Sorted(lowered)
        self._backwards = _Sorted(backwards)

    def close(self, name: str, n: int = 3) -> list[str]:
        """Up to ``n`` names like ``name``, the closest first (none under ``CUTOFF``)."""
        typed = name[:MAX_NAME]
        return _best(typed, [self.names[i] for i in self.candidates(typed)], n)

    def candidates(self, typed: str) -> list[int]:
        """Indices of at most ``MAX_SCORED`` names that share the most of their beginning or
        end with ``typed`` or a reordering of its words."""
        low = typed[:MAX_NAME].lower()
        prefix = low.rpartition(_PREFIX)[0]
        orders = _word_orders(typed[:MAX_NAME])
        probes = [(self._forwards, low), (self._backwards, low[::-1])]
        for order in orders:
            probes.append((self._forwards, f"{prefix}{_PREFIX}{order}" if prefix else order))
            probes.append((self._backwards, order[::-1]))
        shared: dict[int, int] = {}
        for keys, probe in probes[:MAX_PROBES]:
            keys.near(probe, shared)
        return sorted(shared, key=lambda i: (-shared[i], i))[:MAX_SCORED]


class _Sorted:
    """Keys in sorted order, each with the index of its name."""

    def __init__(self, keys: list[str]) -> None:
        self.ids = sorted(range(len(keys)), key=keys.__getitem__)
        self.keys = list(map(keys.__getitem__, self.ids))

    def near(self, probe: str, shared: dict[int, int]) -> None:
        """Record, for the names sorted next to ``probe``, how many characters they share
        with it at its beginning and at its end (an edit in the middle costs little)."""
        at = bisect_left(self.keys, probe)
        for j in range(max(0, at - NEIGHBOURS), min(len(self.keys), at + NEIGHBOURS)):
            i, key = self.ids[j], self.keys[j]
            both = _common_start(key, probe) + _common_start(key[::-1], probe[::-1])
            shared[i] = max(shared.get(i, 0), both)


def _common_start(a: str, b: str) -> int:
    """The length of the longest common beginning, found by halving (each step compares two
    slices in C, and the probe is at most ``MAX_NAME`` long)."""
    lo, hi = 0, min(len(a), len(b), MAX_NAME)
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _word_orders(typed: str) -> list[str]:
    """The words of the last part of ``typed`` (after any ``server__``) in other orders,
    lower-cased and joined as snake, camel and kebab case."""
    words = [w.lower() for w in _WORDS.findall(typed.rpartition(_PREFIX)[2])]
    if not 2 <= len(words) <= _MAX_WORDS:
        return []
    if len(words) <= _MAX_ORDERED:
        orders: Iterable[Sequence[str]] = permutations(words)
    else:
        orders = [words[k:] + words[:k] for k in range(1, len(words))] + [words[::-1]]
    # snake_case and camelCase (lower-cased) always: a model may type either for the other
    joiners = ("_", "", "-") if "-" in typed else ("_", "")
    spelt = {joiner.join(order) for order in orders for joiner in joiners}
    return sorted(spelt)  # sorted: the same probes, in the same order, on every run


def _views(name: str) -> tuple[str, str, str]:
    """A name lower-cased: whole, without its server prefix, and as its sorted words."""
    name = name[:MAX_NAME]
    last = name.rpartition(_PREFIX)[2] or name
    words = " ".join(sorted(w.lower() for w in _WORDS.findall(last)))
    return name.lower(), last.lower(), words


# a matching last part or set of words counts a little less than the same whole name, so
# that the typed server's own tool comes first
_WEIGHTS = (1.0, 0.95, 0.9)


class _Typed:
    """The typed name's views, each in a matcher that has indexed it once for all the names
    compared with it (difflib's ``get_close_matches`` does the same)."""

    def __init__(self, typed: str) -> None:
        self.views = _views(typed)
        self.matchers = []
        for view in self.views:
            matcher = SequenceMatcher(None, autojunk=False)
            matcher.set_seq2(view)
            self.matchers.append(matcher)


def _score(typed: _Typed, name: str, floor: float) -> float:
    """How like the typed name ``name`` is: the best weighted similarity of their views, or
    0 when it cannot reach ``floor`` (the cheap upper bounds of difflib say so first)."""
    best = 0.0
    for weight, matcher, mine, theirs in zip(_WEIGHTS, typed.matchers, typed.views, _views(name), strict=True):
        need = max(best, floor) / weight
        if not mine or not theirs or need > 1:
            continue
        if mine == theirs:
            best = weight
            continue
        matcher.set_seq1(theirs)
        if matcher.real_quick_ratio() >= need and matcher.quick_ratio() >= need:
            best = max(best, weight * matcher.ratio())
    return best if best >= floor else 0.0


def _best(typed: str, names: Iterable[str], n: int) -> list[str]:
    """The ``n`` names most like ``typed`` (at least ``CUTOFF``): the most alike first, then
    the closest in length, then by name."""
    if n <= 0:
        return []
    views = _Typed(typed)
    kept: list[tuple[float, int, str]] = []
    for name in dict.fromkeys(names):
        # a name must beat the n-th kept so far: most are turned down by the cheap bounds
        floor = max(CUTOFF, -kept[n - 1][0]) if len(kept) >= n else CUTOFF
        score = _score(views, name, floor)
        if score:
            kept.append((-score, abs(len(name) - len(typed)), name))
            kept.sort()
            del kept[n:]
    return [name for _, _, name in kept]


_last: list[NameIndex] = []
_lock = threading.Lock()


def close_names(name: str, pool: Sequence[str], n: int = 3) -> list[str]:
    """Up to ``n`` names of ``pool`` like ``name``, the closest first.

    A pool of at most ``MAX_SCORED`` names is scored whole. A larger one is looked up in a
    ``NameIndex``, kept for the next call: a pool equal to the last one (a comparison of two
    lists, in C: under a millisecond at 100,000 names) reuses it.
    """
    if n <= 0 or not pool:
        return []
    if len(pool) <= MAX_SCORED:
        return _best(name[:MAX_NAME], pool, n)
    names = pool if isinstance(pool, list) else list(pool)
    with _lock:
        index = _last[0] if _last and _last[0].names == names else None
        if index is None:
            index = NameIndex(names)
            _last[:] = [index]
    return index.close(name, n)


_by_catalog: IdentityMemo[NameIndex] = IdentityMemo(1)


def close_in(catalog: Sequence[ToolDescriptor], name: str, n: int = 3) -> list[str]:
    """``close_names`` over a run's catalog (``RunContext.catalog()``), whose index is
    kept with the catalog object, so a miss costs the same at any size."""
    if len(catalog) <= MAX_SCORED:
        return close_names(name, [d.name for d in catalog], n)
    with _lock:
        hit = _by_catalog.lookup((catalog,))
        index = hit[0] if hit is not None else _by_catalog.put((catalog,), NameIndex(d.name for d in catalog))
    return index.close(name, n)
