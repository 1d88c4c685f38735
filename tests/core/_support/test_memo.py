"""IdentityMemo: a hit needs the very same objects (not equal ones) and the same tag, a
kept None is told from a miss, the oldest entry goes first when it is full, and a weak
memo's entry goes with its first object."""

from __future__ import annotations

import gc

from greenroom.kit import IdentityMemo


def test_a_hit_needs_the_same_objects_and_tag() -> None:
    memo: IdentityMemo[int] = IdentityMemo(4)
    a, b = {"x": 1}, {"x": 1}
    memo.put((a,), 7, "tokens")
    assert memo.lookup((a,), "tokens") == (7,)
    assert memo.lookup((b,), "tokens") is None  # equal, not the same
    assert memo.lookup((a,), "chars") is None
    memo.put((a, b), 9)
    assert memo.lookup((a, b)) == (9,) and memo.lookup((b, a)) is None


def test_a_kept_none_is_a_hit() -> None:
    memo: IdentityMemo[None] = IdentityMemo(2)
    key = object()
    assert memo.lookup((key,)) is None
    memo.put((key,), None)
    assert memo.lookup((key,)) == (None,)


def test_the_oldest_entry_goes_first_and_the_size_stays_bounded() -> None:
    memo: IdentityMemo[int] = IdentityMemo(3)
    keys = [object() for _ in range(10_000)]
    for i, k in enumerate(keys):
        memo.put((k,), i)
        assert len(memo) <= 3
    assert memo.lookup((keys[-1],)) == (9_999,) and memo.lookup((keys[-3],)) == (9_997,)
    assert memo.lookup((keys[-4],)) is None


class Owner:
    """An object that takes weak references (a runtime's catalog, a descriptor)."""


def test_a_weak_entry_goes_with_its_first_object() -> None:
    memo: IdentityMemo[list[int]] = IdentityMemo(8, weak=True)
    owner, other = Owner(), Owner()
    memo.put((owner, other), [1, 2], "tag")
    assert memo.lookup((owner, other), "tag") == ([1, 2],)
    del owner
    gc.collect()
    assert len(memo) == 0  # nothing of it is kept for the collector to scan


def test_a_weak_memo_keeps_nothing_for_an_object_without_weak_references() -> None:
    memo: IdentityMemo[int] = IdentityMemo(8, weak=True)
    key = (1, 2)  # a tuple takes no weak reference
    assert memo.put((key,), 3) == 3
    assert memo.lookup((key,)) is None and len(memo) == 0
