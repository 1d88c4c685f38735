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

Those searches read a few names on each side, which a family of names that differ only after
the mistake can fill (``create_issue__r1`` ... ``__r22``, or one tool under many servers). So
a single edit is also undone at each place it can be (no further in than the longest
beginning any name shares with the typed one, nor from the end than the longest end): two
neighbouring letters swapped back, a letter removed, and a letter put in or changed for each
letter that follows there in some name. Each costs a binary search (at most ``MAX_REPAIRS``
in all), and a name found so is scored first.

At most ``MAX_SCORED`` of the names found get the costly similarity score, and only the
first ``MAX_NAME`` characters of a name are compared. Names of the same score are ordered by
the similarity of the whole names, then by the fewest edits (counted for such ties only).
``close_names`` keeps the index of the last pool it was given; a holder of a catalog can keep
its own ``NameIndex``.
"""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections import Counter
from collections.abc import Iterable, Sequence
from difflib import SequenceMatcher
from itertools import permutations
from operator import itemgetter

from greenroom._support.memo import IdentityMemo
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

MAX_REPAIRS = 160
"""The most binary searches for the typed name with one edit undone."""

MAX_BRANCHES = 40
"""The most letters tried where a letter may have been dropped or changed."""

_PREFIX = "__"  # server__tool, as greenroom names MCP tools
_WORDS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+|[^\W\dA-Za-z_]+")
_MAX_ORDERED = 3  # words whose every order is tried; more are only rotated
_MAX_WORDS = 6  # a longer name is not looked up in other orders
_BACKWARDS = itemgetter(slice(None, None, -1))
_AFTER_ALL = chr(0x10FFFF)  # sorts after any letter that can follow a beginning
_REPAIRED = 2 * MAX_NAME + 1  # more shared than any name read near a probe


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
        longest = [keys.near(probe, shared) for keys, probe in probes[:MAX_PROBES]]
        for i in self._repaired(low, longest[0], longest[1]):
            shared[i] = _REPAIRED
        return sorted(shared, key=lambda i: (-shared[i], i))[:MAX_SCORED]

    def _repaired(self, low: str, start: int, end: int) -> list[int]:
        """Indices of the names that are ``low`` with one edit undone, where some name shares
        ``start`` characters of its beginning and another ``end`` of its end: the edit is at
        most ``start`` characters in and ``end`` from the end. Each place is tried from those
        two inwards (the meant name often shares the most on one side), letters put in from
        the side sharing more, where fewer names begin alike."""
        budget = _Budget()
        size = len(low)
        backwards = low[::-1]
        places = list(range(max(0, size - end - 2), min(start, size) + 1))
        for at in (places[k // 2] if k % 2 else places[-1 - k // 2] for k in range(len(places))):
            self._forwards.undo_moves(low, at, budget)
            if at >= size - at:
                self._forwards.undo_letters(low, at, budget)
            else:  # spelt backwards, the first puts a letter in at ``at``, the second changes it
                self._backwards.undo_letters(backwards, size - at, budget)
                self._backwards.undo_letters(backwards, size - at - 1, budget)
        return budget.found


class _Budget:
    """The binary searches left for undoing edits of one typed name, and the names found."""

    def __init__(self) -> None:
        self.left = MAX_REPAIRS
        self.found: list[int] = []

    def spend(self) -> bool:
        self.left -= 1
        return self.left >= 0


class _Sorted:
    """Keys in sorted order, each with the index of its name."""

    def __init__(self, keys: list[str]) -> None:
        self.ids = sorted(range(len(keys)), key=keys.__getitem__)
        self.keys = list(map(keys.__getitem__, self.ids))

    def near(self, probe: str, shared: dict[int, int]) -> int:
        """Record, for the names sorted next to ``probe``, how many characters they share
        with it at its beginning and at its end (an edit in the middle costs little). The
        longest beginning shared with any key: the keys either side of ``probe`` have it."""
        at = bisect_left(self.keys, probe)
        longest = 0
        for j in range(max(0, at - NEIGHBOURS), min(len(self.keys), at + NEIGHBOURS)):
            i, key = self.ids[j], self.keys[j]
            start = _common_start(key, probe)
            both = start + _common_start(key[::-1], probe[::-1])
            shared[i] = max(shared.get(i, 0), both)
            longest = max(longest, start)
        return longest

    def find(self, key: str, budget: _Budget, lo: int = 0, hi: int | None = None) -> None:
        """Add the names whose key is ``key`` (searched for between ``lo`` and ``hi``)."""
        if not budget.spend():
            return
        hi = len(self.keys) if hi is None else hi
        at = bisect_left(self.keys, key, lo, hi)
        while at < hi and self.keys[at] == key and len(budget.found) < MAX_SCORED:
            budget.found.append(self.ids[at])
            at += 1

    def undo_moves(self, typed: str, at: int, budget: _Budget) -> None:
        """Look up ``typed`` without its letter at ``at``, and with that letter and the next
        swapped back."""
        if 0 <= at < len(typed):
            self.find(typed[:at] + typed[at + 1 :], budget)
        if 0 <= at < len(typed) - 1:
            self.find(typed[:at] + typed[at + 1] + typed[at] + typed[at + 2 :], budget)

    def undo_letters(self, typed: str, at: int, budget: _Budget) -> None:
        """Look up ``typed`` with a letter put in at ``at``, or its letter there changed, for
        each letter that follows ``typed[:at]`` in some key: the keys that begin so are
        together, so each letter costs a binary search in them."""
        if not 0 <= at <= len(typed) or not budget.spend():
            return
        head = typed[:at]
        lo = bisect_left(self.keys, head)
        hi = bisect_left(self.keys, head + _AFTER_ALL, lo)
        for _ in range(MAX_BRANCHES):
            while lo < hi and len(self.keys[lo]) == at:
                lo += 1  # the beginning itself, a whole key (a pool may hold it more than once)
            if lo >= hi or not budget.spend():
                return
            branch = head + self.keys[lo][at]
            end = bisect_left(self.keys, branch + _AFTER_ALL, lo, hi)
            self.find(branch + typed[at:], budget, lo, end)
            self.find(branch + typed[at + 1 :], budget, lo, end)
            lo = max(end, lo + 1)


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


def _score(typed: _Typed, name: str, floor: float, tie: float = 0.0) -> tuple[float, float]:
    """How like the typed name ``name`` is: the best weighted similarity of their views, or
    0 when it cannot reach ``floor`` (the cheap upper bounds of difflib say so first); and
    the similarity of the whole names, which orders names of the same score (every tool of a
    server's ``server__get`` has the same last part as ``servr__get``). A name of score
    ``floor`` whose whole similarity cannot reach ``tie`` gets 0."""
    best = whole = 0.0
    views = _views(name)
    for k, (weight, matcher, mine, theirs) in enumerate(zip(_WEIGHTS, typed.matchers, typed.views, views, strict=True)):
        need = max(best, floor) / weight
        if not mine or not theirs or need > 1:
            continue
        if mine == theirs:
            similarity = 1.0
        else:
            matcher.set_seq1(theirs)
            if matcher.real_quick_ratio() < need or matcher.quick_ratio() < need:
                continue
            similarity = matcher.ratio()
        whole = similarity if k == 0 else whole
        best = max(best, weight * similarity)
    if best < floor:
        return 0.0, 0.0
    if not whole and typed.views[0] and views[0]:  # the whole names were cut by a bound
        matcher, need = typed.matchers[0], tie if best == floor else 0.0
        matcher.set_seq1(views[0])
        if matcher.real_quick_ratio() < need or matcher.quick_ratio() < need:
            return 0.0, 0.0
        whole = matcher.ratio()
    return best, whole


def _best(typed: str, names: Iterable[str], n: int) -> list[str]:
    """The ``n`` names most like ``typed`` (at least ``CUTOFF``): the most alike first, then
    the most alike as whole names, then the fewest edits away (a swapped letter and a dropped
    one can be as alike by difflib's measure as two edits), then the closest in length, then
    by name."""
    if n <= 0:
        return []
    views = _Typed(typed)
    kept: list[tuple[float, float, str]] = []
    for name in dict.fromkeys(names):
        # a name must reach the n-th kept so far: most are turned down by the cheap bounds
        floor, tie = (-kept[n - 1][0], -kept[n - 1][1]) if len(kept) >= n else (CUTOFF, 0.0)
        score, whole = _score(views, name, floor, tie)
        if score:
            kept.append((-score, -whole, name))
            kept.sort()
            while len(kept) > n and kept[-1][:2] != kept[n - 1][:2]:
                kept.pop()  # names as alike as the n-th stay: fewer edits may put them first
    alike = Counter(entry[:2] for entry in kept)
    low = typed.lower()

    def order(entry: tuple[float, float, str]) -> tuple[float, float, int, int, str]:
        name = entry[2]
        edits = _edits(low, name[:MAX_NAME].lower()) if alike[entry[:2]] > 1 else 0
        return (*entry[:2], edits, abs(len(name) - len(typed)), name)

    return [entry[2] for entry in sorted(kept, key=order)[:n]]


def _edits(a: str, b: str, most: int = 3) -> int:
    """The fewest letters put in, dropped, changed or swapped with the next that turn ``a``
    into ``b``, or ``most + 1`` when more: only cells within ``most`` of the diagonal are
    filled, so two long names cost little."""
    far = most + 1
    if abs(len(a) - len(b)) > most:
        return far
    before: list[int] = []
    row = [min(j, far) for j in range(len(b) + 1)]
    for i in range(1, len(a) + 1):
        new = [min(i, far)] + [far] * len(b)
        for j in range(max(1, i - most), min(len(b), i + most) + 1):
            cost = min(row[j] + 1, new[j - 1] + 1, row[j - 1] + (a[i - 1] != b[j - 1]))
            if before and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                cost = min(cost, before[j - 2] + 1)
            new[j] = min(cost, far)
        before, row = row, new
    return row[-1]


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


_by_catalog: IdentityMemo[NameIndex] = IdentityMemo(1, weak=True)  # goes with its catalog


def close_in(catalog: Sequence[ToolDescriptor], name: str, n: int = 3) -> list[str]:
    """``close_names`` over a run's catalog (``RunContext.catalog()``), whose index is
    kept with the catalog object, so a miss costs the same at any size."""
    if len(catalog) <= MAX_SCORED:
        return close_names(name, [d.name for d in catalog], n)
    with _lock:
        hit = _by_catalog.lookup((catalog,))
        index = hit[0] if hit is not None else _by_catalog.put((catalog,), NameIndex(d.name for d in catalog))
    return index.close(name, n)
