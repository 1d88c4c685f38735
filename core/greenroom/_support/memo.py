"""Values derived from objects that do not change, kept by the objects' identity.

Descriptors, schemas and catalogs are made once and never changed, but some hold dicts
and cannot be hashed, and comparing them by content would cost what the memo saves. So
entries are keyed by ``id``, and each entry holds its key objects: an id is never reused
while its entry lives, and a hit is checked with ``is``. At most ``limit`` entries are
kept, the oldest dropped first, in an ``OrderedDict``: dropping a plain dict's first key
again and again is quadratic (each search for the first key walks the slots deleted
before it).
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """A bounded memo keyed by the identity of some objects (and an optional ``tag``,
    compared by value: a field name, a revision)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._entries: OrderedDict[tuple[tuple[int, ...], Hashable], tuple[tuple[object, ...], V]] = OrderedDict()

    def lookup(self, objects: tuple[object, ...], tag: Hashable = None) -> tuple[V] | None:
        """``(value,)`` kept for exactly these objects and ``tag``, or None."""
        hit = self._entries.get((tuple(map(id, objects)), tag))
        if hit is None or any(a is not b for a, b in zip(hit[0], objects, strict=True)):
            return None
        return (hit[1],)

    def put(self, objects: tuple[object, ...], value: V, tag: Hashable = None) -> V:
        """Keep ``value`` for these objects and ``tag``; returns it."""
        if len(self._entries) >= self.limit:
            self._entries.popitem(last=False)
        self._entries[(tuple(map(id, objects)), tag)] = (objects, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["IdentityMemo"]
