"""Values derived from objects that do not change, kept by the objects' identity.

Descriptors, schemas and catalogs are made once and never changed, but some hold dicts
and cannot be hashed, and comparing them by content would cost what the memo saves. So
entries are keyed by ``id``, and each entry holds its key objects: an id is never reused
while its entry lives, and a hit is checked with ``is``. At most ``limit`` entries are
kept, the oldest dropped first, in an ``OrderedDict``: dropping a plain dict's first key
again and again is quadratic (each search for the first key walks the slots deleted
before it).

A memo made with ``weak=True`` holds the first key object by a weak reference and
drops the entry when that object goes: a process-wide memo keyed on a runtime's
catalog then keeps nothing of a runtime that was closed and let go, so the garbage
collector does not scan its 100,000 descriptors again in every later collection.
"""

from __future__ import annotations

import weakref
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

V = TypeVar("V")


class IdentityMemo(Generic[V]):
    """A bounded memo keyed by the identity of some objects (and an optional ``tag``,
    compared by value: a field name, a revision). With ``weak``, an entry lives only as
    long as its first key object; nothing is kept for one that takes no weak reference."""

    def __init__(self, limit: int, *, weak: bool = False) -> None:
        self.limit = limit
        self.weak = weak
        self._entries: OrderedDict[tuple[tuple[int, ...], Hashable], tuple[tuple[object, ...], V]] = OrderedDict()

    def lookup(self, objects: tuple[object, ...], tag: Hashable = None) -> tuple[V] | None:
        """``(value,)`` kept for exactly these objects and ``tag``, or None."""
        hit = self._entries.get((tuple(map(id, objects)), tag))
        if hit is None:
            return None
        held = hit[0]
        if self.weak:
            held = (held[0](), *held[1:])  # type: ignore[operator]  # a weak reference, when weak
        if any(a is not b for a, b in zip(held, objects, strict=True)):
            return None
        return (hit[1],)

    def put(self, objects: tuple[object, ...], value: V, tag: Hashable = None) -> V:
        """Keep ``value`` for these objects and ``tag``; returns it."""
        if len(self._entries) >= self.limit:
            self._entries.popitem(last=False)
        key = (tuple(map(id, objects)), tag)
        held = objects
        if self.weak:
            # the entry goes with its first object: the callback drops it unless another
            # entry took the key since (an id is reused only after its object is gone)
            entries = self._entries

            def gone(ref: weakref.ref[object]) -> None:
                entry = entries.get(key)
                if entry is not None and entry[0][0] is ref:
                    entries.pop(key, None)

            try:
                held = (weakref.ref(objects[0], gone), *objects[1:])
            except TypeError:  # a tuple or a list takes no weak reference: not kept
                return value
        self._entries[key] = (held, value)
        return value

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


__all__ = ["IdentityMemo"]
