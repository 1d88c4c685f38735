"""The digest cache keeps what was built under (namespace, digest), shared by processes:
a hit returns what was stored, another digest is a miss, a torn or foreign entry is
rebuilt and never an error, the total size stays within its bound (least recently used
entries go first), and two processes asking together build an entry once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from greenroom._support.digest_cache import DigestCache, default_digest_cache, use_digest_cache


def builder(value: Any) -> tuple[list[int], Any]:
    calls: list[int] = []

    def build() -> Any:
        calls.append(1)
        return value

    return calls, build


def test_a_stored_entry_is_found_again_and_another_digest_is_a_miss(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path)
    calls, build = builder({"counts": [1, 2, 3]})
    assert cache.get_or_build("costs.v1", "abc", build) == {"counts": [1, 2, 3]}
    assert cache.get_or_build("costs.v1", "abc", build) == {"counts": [1, 2, 3]}
    assert len(calls) == 1
    # a fresh cache object over the same folder (a new process) finds it too
    again = DigestCache(tmp_path)
    assert again.get_or_build("costs.v1", "abc", build) == {"counts": [1, 2, 3]}
    assert len(calls) == 1 and again.stats["hits"] == 1 and again.stats["builds"] == 0
    # a changed catalog has another digest: built anew, the old entry left to age out
    assert cache.get_or_build("costs.v1", "abd", builder([9])[1]) == [9]
    assert cache.get("costs.v1", "abc") == {"counts": [1, 2, 3]}
    assert cache.get("costs.v2", "abc") is None  # another namespace (a new version of the computation)


def test_encode_and_decode_round_trip_and_an_undecodable_value_is_rebuilt(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path)
    calls, build = builder({3: "c"})

    def decode(value: Any) -> dict[int, str]:
        return {int(k): v for k, v in value.items()}

    kw: dict[str, Any] = {"encode": lambda v: {str(k): x for k, x in v.items()}, "decode": decode}
    assert cache.get_or_build("m.v1", "d1", build, **kw) == {3: "c"}
    assert cache.get_or_build("m.v1", "d1", build, **kw) == {3: "c"} and len(calls) == 1
    cache.put("m.v1", "d1", ["not", "a", "mapping"])  # a value this decode cannot use
    assert cache.get_or_build("m.v1", "d1", build, **kw) == {3: "c"}
    assert len(calls) == 2 and cache.stats["corrupt"] >= 1


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[: len(data) // 2],  # torn write
        lambda data: b"",
        lambda data: b"\xff\xfe not json",
        lambda data: json.dumps({"format": 1, "namespace": "other", "digest": "d", "value": 1}).encode(),
        lambda data: json.dumps([1, 2]).encode(),
    ],
)
def test_a_corrupt_entry_is_a_miss_and_is_rebuilt(tmp_path: Path, damage: Any) -> None:
    cache = DigestCache(tmp_path)
    calls, build = builder([1, 2])
    cache.get_or_build("c.v1", "d", build)
    path = cache.path("c.v1", "d")
    path.write_bytes(damage(path.read_bytes()))
    assert cache.get("c.v1", "d") is None
    assert cache.get_or_build("c.v1", "d", build) == [1, 2]
    assert len(calls) == 2
    assert cache.get("c.v1", "d") == [1, 2]  # the rebuilt entry replaced the broken one


def test_binary_entries_hold_bytes_and_a_truncated_one_is_a_miss(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path)
    blob = bytes(range(256)) * 10
    assert cache.get_or_build("index.v1", "d", lambda: blob, binary=True) == blob
    assert DigestCache(tmp_path).get("index.v1", "d", binary=True) == blob
    path = cache.path("index.v1", "d", binary=True)
    path.write_bytes(path.read_bytes()[:-1])
    assert cache.get("index.v1", "d", binary=True) is None


def test_least_recently_used_entries_are_evicted_to_stay_within_the_bound(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path, max_bytes=3000)
    payload = "x" * 900
    for i, digest in enumerate(("a", "b", "c")):
        cache.put("e.v1", digest, payload)
        os.utime(cache.path("e.v1", digest), (1000 + i, 1000 + i))  # a, then b, then c
    assert DigestCache(tmp_path).get("e.v1", "a") == payload  # a is used again: now the newest
    cache.put("e.v1", "d", payload)  # over the bound: the least recently used (b) goes
    assert {p.stem for p, _, _ in cache.entries()} == {"a", "c", "d"}
    assert sum(size for _, _, size in cache.entries()) <= 3000
    assert cache.stats["evictions"] == 1
    # an entry larger than the whole bound is written, and evicts everything else
    cache.put("e.v1", "big", "y" * 5000)
    assert [p.stem for p, _, _ in cache.entries()] == ["big"]


def test_a_folder_that_cannot_be_written_leaves_the_cache_unused(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    cache = DigestCache(blocker / "cache")
    calls, build = builder([1])
    assert cache.get_or_build("u.v1", "d", build) == [1]
    assert cache.get_or_build("u.v1", "d", build) == [1]
    assert len(calls) == 2  # built each time, never an error


def test_names_cannot_leave_the_cache_folder(tmp_path: Path) -> None:
    cache = DigestCache(tmp_path)
    for bad in ("../x", "a/b", "", ".hidden"):
        with pytest.raises(ValueError):
            cache.path(bad, "d")
        with pytest.raises(ValueError):
            cache.path("n.v1", bad)


def test_the_default_cache_lives_in_the_state_dir_and_a_test_can_swap_it(tmp_path: Path) -> None:
    assert default_digest_cache().root == Path(os.environ["GREENROOM_HOME"]) / "digests"
    mine = DigestCache(tmp_path)
    with use_digest_cache(mine):
        assert default_digest_cache() is mine
    assert default_digest_cache() is not mine


TWO_PROCESSES = textwrap.dedent(
    """
    import json, sys
    from greenroom._support.digest_cache import DigestCache

    cache = DigestCache(sys.argv[1])

    def build():
        print("building", flush=True)
        sys.stdin.readline()  # the build lasts until the test says so
        return {"built_by": sys.argv[2]}

    print("asking", flush=True)
    value = cache.get_or_build("two.v1", "same", build)
    print(json.dumps({"value": value, "builds": cache.stats["builds"]}), flush=True)
    """
)


def test_two_processes_build_an_entry_once_and_both_get_it(tmp_path: Path) -> None:
    script = tmp_path / "two.py"
    script.write_text(TWO_PROCESSES)
    root = tmp_path / "cache"

    def start(who: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, str(script), str(root), who], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    first = start("first")
    assert first.stdout is not None and first.stdin is not None
    assert first.stdout.readline().strip() == "asking"
    assert first.stdout.readline().strip() == "building"  # the first holds the build's lock
    second = start("second")
    assert second.stdout is not None
    assert second.stdout.readline().strip() == "asking"  # and the second asks meanwhile
    first.stdin.write("done\n")
    first.stdin.flush()
    results = [json.loads(p.communicate(timeout=60)[0].strip().splitlines()[-1]) for p in (first, second)]
    assert [r["value"] for r in results] == [{"built_by": "first"}] * 2
    assert [r["builds"] for r in results] == [1, 0]  # one build: the second read the first's entry
