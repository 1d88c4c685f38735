"""A large catalog's read is kept on disk under its digest: the next read of the same
bytes parses no JSON and gives the same tools, and a changed file, a different limit or a
torn entry is parsed again."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from greenroom._support.digest_cache import DigestCache, use_digest_cache, work
from greenroom.tools import catalog_disk
from greenroom.tools.catalog import CatalogFile, read_catalog, schema_origin


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setattr(catalog_disk, "MIN_BYTES", 1)  # every catalog is worth keeping here
    with use_digest_cache(DigestCache(tmp_path / "cache")) as c:
        yield c


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def records(n: int, word: str = "find") -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        params = {"type": "object", "properties": {"q": {"type": "string", "enum": [word, str(i)]}}}
        out.append({"name": f"t{i}", "description": f"{word} {i}", "parameters": params, "group": f"g{i % 3}"})
    out[1]["deferrable"] = "never"
    out.append({"name": "t0", "description": "a repeated name is dropped", "parameters": None})
    return out


def seen(catalog: CatalogFile) -> list[tuple[Any, ...]]:
    return [(d.name, d.description, dict(d.parameters), d.group, d.deferrable) for d in catalog.descriptors]


def parses() -> int:
    return work["catalog parses"]


def test_a_known_catalog_is_read_from_disk_as_it_was_parsed(tmp_path: Path, cache: DigestCache) -> None:
    path = write(tmp_path / "c.jsonl", records(40))
    before = parses()
    first = read_catalog(path)
    again = read_catalog(path)
    assert parses() == before + 1  # the second read parsed nothing
    assert cache.stats["hits:" + catalog_disk.NAMESPACE] == 1
    assert seen(again) == seen(first) and len(again) == 40
    assert seen(again)[1][4] == "never" and seen(again)[0][1] == "find 0"  # first of a repeated name kept
    assert again.digest == first.digest
    # the schemas rebuilt from disk know their own catalog and position, as parsed ones do
    assert all(schema_origin(d.parameters) == (again, i) for i, d in enumerate(again.descriptors))


def test_a_changed_file_or_limit_is_parsed_again(tmp_path: Path, cache: DigestCache) -> None:
    path = write(tmp_path / "c.jsonl", records(40))
    read_catalog(path)
    before = parses()
    assert len(read_catalog(path, limit=10)) == 10
    write(path, records(40, word="seek"))
    changed = read_catalog(path)
    assert parses() == before + 2
    assert changed.descriptors[5].description == "seek 5"
    assert changed.descriptors[5].parameters["properties"]["q"]["enum"] == ["seek", "5"]


@pytest.mark.parametrize("damage", ["torn", "foreign"])
def test_a_damaged_entry_is_parsed_again(tmp_path: Path, cache: DigestCache, damage: str) -> None:
    path = write(tmp_path / "c.jsonl", records(40))
    first = read_catalog(path)
    entry = cache.path(catalog_disk.NAMESPACE, first.digest, binary=True)
    if damage == "torn":
        entry.write_bytes(entry.read_bytes()[:-100])
    else:  # a whole entry of this key whose value is not a read catalog
        cache.put(catalog_disk.NAMESPACE, first.digest, b"\xff not marshal", binary=True)
    before = parses()
    assert seen(read_catalog(path)) == seen(first)
    assert parses() == before + 1


def test_a_small_catalog_is_not_kept(tmp_path: Path, cache: DigestCache, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_disk, "MIN_BYTES", 1 << 20)
    first = read_catalog(write(tmp_path / "c.jsonl", records(40)))
    assert not cache.path(catalog_disk.NAMESPACE, first.digest, binary=True).exists()
