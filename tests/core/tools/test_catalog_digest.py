"""A catalog file is read once per process and checked once per digest: its schemas know
where they came from, their problems are found for the whole catalog at once and kept on
disk, and a changed file is checked again. Reading in chunks keeps every error where it
was (file and line)."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path
from typing import Any

import attrs
import pytest

from greenroom._support.digest_cache import DigestCache, use_digest_cache, work
from greenroom.compose.sources import schema_problems
from greenroom.tools import ToolDescriptor
from greenroom.tools.catalog import (
    CatalogError,
    CatalogSchema,
    catalog_entry,
    descriptors_digest,
    load_catalog,
    read_catalog,
    schema_origin,
)
from greenroom.tools.schema.problem import SchemaFault
from greenroom.tools.toolset import ToolSet

GOOD = {"type": "object", "properties": {"q": {"type": "string"}}}
BAD_TYPE = {"type": "object", "properties": {"q": {"type": "strnig"}}}
META_ONLY = {"type": "object", "properties": {"q": {"type": "string", "format": 3}}}


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def records(n: int, bad_at: tuple[int, ...] = ()) -> list[dict[str, Any]]:
    return [
        {"name": f"t{i}", "description": f"Tool {i}.", "parameters": BAD_TYPE if i in bad_at else GOOD}
        for i in range(n)
    ]


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    with use_digest_cache(DigestCache(tmp_path / "cache")) as c:
        yield c


def test_schemas_know_their_catalog_and_position_and_copies_are_plain(tmp_path: Path) -> None:
    catalog = read_catalog(write(tmp_path / "c.jsonl", records(3)))
    d = catalog.descriptors[2]
    assert isinstance(d.parameters, CatalogSchema) and d.parameters == GOOD
    assert schema_origin(d.parameters) == (catalog, 2)
    assert catalog_entry(attrs.evolve(d, group="g")) == (catalog, 2)  # regrouped: the same entry
    assert catalog_entry(attrs.evolve(d, name="other")) is None  # renamed: no longer that entry
    for twin in (copy.deepcopy(d.parameters), pickle.loads(pickle.dumps(d.parameters))):
        assert type(twin) is dict and twin == GOOD  # the catalog does not travel with a copy


def test_the_digest_follows_the_bytes_and_the_limit(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", records(5))
    first = read_catalog(path)
    assert read_catalog(path).digest == first.digest
    assert read_catalog(path, limit=2).digest != first.digest
    write(path, records(6))
    assert read_catalog(path).digest != first.digest


def test_problems_are_checked_once_per_digest_and_kept_on_disk(tmp_path: Path, cache: DigestCache) -> None:
    path = write(tmp_path / "c.jsonl", records(40, bad_at=(7, 31)))
    before = work["schema checks"]
    tools = ToolSet(load_catalog(path))
    assert set(tools.unusable) == {"t7", "t31"}
    assert tools.unusable["t7"].fault is SchemaFault.UNKNOWN_TYPE
    assert work["schema checks"] - before == 40

    # the same file read again (as a new process would): nothing is checked, same findings
    again = ToolSet(load_catalog(path))
    assert work["schema checks"] - before == 40
    assert dict(again.unusable) == dict(tools.unusable)
    assert "t7" not in {d.name for d in again.descriptors()}

    # the file changes: another digest, checked again
    write(path, records(40, bad_at=(3,)))
    changed = ToolSet(load_catalog(path))
    assert set(changed.unusable) == {"t3"}
    assert work["schema checks"] - before == 80


def test_group_catalogs_are_checked_from_the_cache_too(tmp_path: Path, cache: DigestCache) -> None:
    path = write(tmp_path / "c.jsonl", records(10, bad_at=(4,)))
    ToolSet(load_catalog(path))  # the catalog is checked once, as tools ...
    known = [attrs.evolve(t.descriptor, group="g") for t in load_catalog(path)]
    before = work["schema checks"]  # ... and not again as a group's known tools
    tools = ToolSet()
    tools.note_known(known)
    assert set(tools.unusable) == {"t4"} and work["schema checks"] == before


def test_a_config_check_finds_what_the_meta_schema_rejects_once_per_digest(tmp_path: Path, cache: DigestCache) -> None:
    recs = records(5)
    recs[2]["parameters"] = META_ONLY
    path = write(tmp_path / "c.jsonl", recs)
    found = [schema_problems(t.descriptor.parameters) for t in load_catalog(path)]
    assert [bool(p) for p in found] == [False, False, True, False, False]
    assert found[2][0].fault is SchemaFault.META_SCHEMA
    before = work["schema checks"]
    assert [schema_problems(t.descriptor.parameters) for t in load_catalog(path)] == found
    assert work["schema checks"] == before
    assert schema_problems(dict(META_ONLY)) == found[2]  # a schema from elsewhere: checked as ever


def test_a_corrupt_cache_entry_is_checked_again(tmp_path: Path, cache: DigestCache) -> None:
    path = write(tmp_path / "c.jsonl", records(6, bad_at=(1,)))
    load_catalog(path)
    ToolSet(load_catalog(path))
    for entry, _, _ in cache.entries():
        entry.write_text('{"format": 1, "namespace": "x"')
    assert set(ToolSet(load_catalog(path)).unusable) == {"t1"}


def test_errors_keep_their_line_deep_in_a_chunk(tmp_path: Path) -> None:
    lines = [json.dumps(r) for r in records(1500)]
    lines[1200] = '{"name": "broken", '
    (tmp_path / "c.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(CatalogError, match=r"c.jsonl:1201: not valid JSON"):
        load_catalog(tmp_path / "c.jsonl")
    lines[1200] = '{"name": "a"} {"name": "b"}'  # two values on a line: an error, as ever
    (tmp_path / "c.jsonl").write_text("\n".join(lines) + "\n")
    with pytest.raises(CatalogError, match=r"c.jsonl:1201: not valid JSON: Extra data"):
        load_catalog(tmp_path / "c.jsonl")
    lines[1200] = '{"name": "x", "colour": 1}'
    (tmp_path / "c.jsonl").write_text("\n".join(lines) + "\n\n")
    with pytest.raises(CatalogError, match=r"c.jsonl:1201: unknown key\(s\) colour"):
        load_catalog(tmp_path / "c.jsonl")


def test_chunked_reading_gives_what_line_by_line_reading_gave(tmp_path: Path) -> None:
    recs = [*records(1100), {"name": "t5", "description": "a repeat: the first is kept"}]
    path = write(tmp_path / "c.jsonl", recs)
    tools = load_catalog(path)
    assert [t.descriptor.name for t in tools] == [f"t{i}" for i in range(1100)]
    assert tools[5].descriptor.description == "Tool 5."
    assert [t.descriptor.name for t in load_catalog(path, limit=700)] == [f"t{i}" for i in range(700)]


def test_a_digest_of_descriptors_follows_their_content_not_their_objects(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", records(50))
    first = read_catalog(path).descriptors
    again = read_catalog(path).descriptors
    assert descriptors_digest(first) == descriptors_digest(again)  # a new process, the same key
    assert descriptors_digest(first[:10] + first[20:]) == descriptors_digest(again[:10] + again[20:])
    assert descriptors_digest(first[::-1]) != descriptors_digest(first)
    regrouped = [attrs.evolve(d, group="g") if d.name == "t7" else d for d in first]
    assert descriptors_digest(regrouped) != descriptors_digest(first)
    assert descriptors_digest(regrouped) == descriptors_digest(
        [attrs.evolve(d, group="g") if d.name == "t7" else d for d in again]
    )
    loose = [ToolDescriptor(d.name, d.description, dict(d.parameters)) for d in first]
    assert descriptors_digest(loose) == descriptors_digest(
        [ToolDescriptor(d.name, d.description, dict(d.parameters)) for d in again]
    )
    assert descriptors_digest(loose) != descriptors_digest([*loose[:-1], attrs.evolve(loose[-1], description="x")])


def test_lines_are_split_at_line_feeds_only_and_a_byte_order_mark_is_skipped(tmp_path: Path) -> None:
    path = tmp_path / "c.jsonl"
    # U+2028 inside a JSON string is valid JSON; splitlines() would cut the record there
    path.write_bytes(
        b"\xef\xbb\xbf"
        + json.dumps({"name": "a", "description": "one\u2028two"}, ensure_ascii=False).encode()
        + b"\r\n"
        + json.dumps({"name": "b"}).encode()
    )
    tools = load_catalog(path)
    assert [t.descriptor.name for t in tools] == ["a", "b"]
    assert tools[0].descriptor.description == "one\u2028two"
    path.write_bytes(json.dumps({"name": "a"}).encode() + b'\n{"name": "\xff"}\n')
    with pytest.raises(CatalogError, match=r"c.jsonl:2: not UTF-8 text"):
        load_catalog(path)
