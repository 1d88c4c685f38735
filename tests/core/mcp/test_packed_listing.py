"""A large listing is kept packed: its schemas as a catalog file's are, its cache read a
few hundred lines at a time, and what is derived from it found again by its digest."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from greenroom.config import McpServerConfig
from greenroom.mcp import McpListing, McpToolSpec, cache_path, read_cached_listing, write_cached_listing
from greenroom.mcp.listing import ListingBuilder
from greenroom.tools.catalog import catalog_entry, peek_schema, schema_origin
from greenroom.tools.schema.check import catalog_problems
from greenroom.tools.schema.problem import SchemaFault


def schema(i: int) -> dict[str, Any]:
    return {"type": "object", "properties": {f"f{i}": {"type": "string", "enum": [str(i), "x"]}}, "required": [f"f{i}"]}


def specs(n: int, **odd: dict[str, Any]) -> tuple[McpToolSpec, ...]:
    return tuple(
        McpToolSpec(name=f"t{i}", description=f"Tool {i}.", input_schema=odd.get(f"t{i}", schema(i))) for i in range(n)
    )


def test_a_cached_listing_reads_back_packed_with_the_digest_it_was_written_with(tmp_path: Path) -> None:
    cfg = McpServerConfig(name="big", command="srv")
    built = ListingBuilder("test")
    for spec in specs(1_200):  # more than one chunk of lines
        built.add_spec(spec)
    listed = built.listing(instructions="Many tools.", listed_at=5.0)
    write_cached_listing(cfg, tmp_path, listed)
    assert listed.encoded == []  # the lines are let go once written
    read = read_cached_listing(cfg, tmp_path)
    assert read is not None and read.digest == listed.digest and read.instructions == "Many tools."
    assert read.tools == listed.tools == specs(1_200)  # what the server said, schema for schema
    assert peek_schema(read.tools[7].input_schema) == schema(7)
    assert not isinstance(read.tools[7].input_schema, dict)  # packed until read


def test_a_changed_tool_changes_the_digest() -> None:
    one, two = ListingBuilder("a"), ListingBuilder("b")
    for spec in specs(5):
        one.add_spec(spec)
    for spec in specs(5, t3={"type": "object", "properties": {}}):
        two.add_spec(spec)
    assert one.listing().digest != two.listing().digest
    again = ListingBuilder("c")
    for spec in specs(5):
        again.add_spec(spec)
    assert again.listing().digest == one.listing().digest


def test_the_tools_of_a_listing_are_one_catalog_whose_problems_are_found_once(tmp_path: Path) -> None:
    pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
    from greenroom.mcp import McpServer

    cfg = McpServerConfig(name="big", command="srv")
    bad = {"type": "object", "properties": {"q": {"type": "strng"}}}
    write_cached_listing(cfg, tmp_path, McpListing(tools=specs(30, t4=bad)))
    server = McpServer(cfg, tmp_path)
    try:
        descriptors = server.descriptors()
        assert [d.name for d in descriptors[:2]] == ["big__t0", "big__t1"]
        origin = catalog_entry(descriptors[4])
        assert origin is not None and origin[1] == 4
        problems = catalog_problems(origin[0])
        assert list(problems) == [4] and problems[4].fault is SchemaFault.UNKNOWN_TYPE
        assert server.descriptors()[0] is descriptors[0]  # named once per listing
    finally:
        server.close()


@pytest.mark.parametrize("damage", ["cut", "count"])
def test_a_damaged_cache_file_is_ignored(tmp_path: Path, damage: str) -> None:
    cfg = McpServerConfig(name="s", command="srv")
    write_cached_listing(cfg, tmp_path, McpListing(tools=specs(3)))
    path = cache_path(cfg, tmp_path)
    data = path.read_bytes()
    if damage == "cut":
        path.write_bytes(data[:-5])  # the last line cut short, as by a full disk
    else:
        path.write_bytes(data.replace(b'"tools": 3', b'"tools": 4'))
    assert read_cached_listing(cfg, tmp_path) is None


def test_a_listing_not_named_yet_is_judged_like_one_that_is() -> None:
    """``config check --connect`` judges a live listing before any tool of it is named."""
    bad = {"type": "object", "properties": {"q": {"type": "string", "examples": "a, b"}}}
    built = ListingBuilder("live")
    for spec in specs(6, t2=bad):
        built.add_spec(spec)
    listing = built.listing()
    origin = schema_origin(listing.tools[2].input_schema)
    assert origin is not None and origin[0] is listing.catalog
    assert list(catalog_problems(listing.catalog)) == [2]


def test_a_large_listing_is_read_back_without_parsing_json(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from greenroom._support.digest_cache import DigestCache, use_digest_cache
    from greenroom.mcp import cache

    cfg = McpServerConfig(name="big", command="srv")
    built = ListingBuilder("test")
    for spec in specs(3_000):
        built.add_spec(McpToolSpec(spec.name, spec.description * 40, spec.input_schema))  # over MIN_BYTES
    listed = built.listing()
    with use_digest_cache(DigestCache(tmp_path / "digests")):
        write_cached_listing(cfg, tmp_path, listed)  # keeps the read as it writes the file

        def no_json(*args: Any) -> None:
            raise AssertionError("the lines were parsed")

        with monkeypatch.context() as patched:
            patched.setattr(cache, "_from_lines", no_json)
            kept = read_cached_listing(cfg, tmp_path)
        assert kept is not None and kept.digest == listed.digest and kept.tools == listed.tools
    with use_digest_cache(DigestCache(tmp_path / "elsewhere")):  # nothing kept: the lines are parsed
        parsed = read_cached_listing(cfg, tmp_path)
    assert parsed is not None and parsed.tools == listed.tools
