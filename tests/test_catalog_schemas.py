"""A catalog's schemas are kept packed until read: a tool that is sent or called reads
like the dict its file holds, and a pass over the whole catalog (token costs, schema
checks, a search index's documents) keeps none of them parsed, so a catalog of 100,000
tools costs memory for what a run uses, not for every schema."""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import attrs

from greenroom._support.digest_cache import DigestCache, use_digest_cache
from greenroom.kit import peek_schema
from greenroom.tokens.counting import compact_json, parameters_json, tool_json
from greenroom.tokens.tool_costs import tool_costs
from greenroom.tools.catalog import descriptors_digest, read_catalog
from greenroom.tools.schema.check import catalog_problems
from greenroom_ranking.text import tool_document


def schema(i: int) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            f"field_{i}": {"type": "string", "description": f"The {i}th field, in words {i * 7}."},
            "limit": {"type": "integer", "minimum": 0, "maximum": 100 + i},
            "tags": {"type": "array", "items": {"type": "string", "enum": [f"a{i}", f"b{i}", "c"]}},
        },
        "required": [f"field_{i}"],
    }


def write(path: Path, n: int) -> Path:
    lines = (json.dumps({"name": f"tool_{i}", "description": f"Does {i}.", "parameters": schema(i)}) for i in range(n))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_a_schema_reads_and_serialises_as_the_object_in_the_file(tmp_path: Path) -> None:
    d = read_catalog(write(tmp_path / "c.jsonl", 3)).descriptors[1]
    params, plain = d.parameters, schema(1)
    assert not isinstance(params, dict)  # read-only: nothing can edit the catalog's copy
    assert params == plain and plain == params and dict(params) == plain
    assert list(params) == list(plain) and len(params) == len(plain) and "required" in params
    assert params["required"] == ["field_1"] and params.get("nothing", 5) == 5
    assert repr(params) == repr(plain)
    assert compact_json(params) == compact_json(plain)
    assert parameters_json(params) == parameters_json(plain)
    assert tool_json(d) == tool_json(attrs.evolve(d, parameters=plain))
    assert peek_schema(params) == plain and peek_schema(plain) is plain
    # a renamed tool is no longer its catalog's entry: its digest serialises the schema
    renamed = attrs.evolve(d, name="other")
    assert descriptors_digest([renamed]) == descriptors_digest([attrs.evolve(renamed, parameters=plain)])


def test_passes_over_a_whole_catalog_keep_no_schema_parsed(tmp_path: Path) -> None:
    path = write(tmp_path / "c.jsonl", 800)
    with use_digest_cache(DigestCache(tmp_path / "cache")):
        catalog = read_catalog(path)
        descriptors = catalog.descriptors

        def growth(work: Any) -> tuple[int, Any]:
            gc.collect()
            tracemalloc.start()
            try:
                before = tracemalloc.get_traced_memory()[0]
                kept = work()
                gc.collect()
                return tracemalloc.get_traced_memory()[0] - before, kept
            finally:
                tracemalloc.stop()

        passes, kept = growth(
            lambda: (
                tool_costs(descriptors, "definition_tokens"),
                tool_costs(descriptors, "parameters_chars"),
                catalog_problems(catalog, full=True),
                [tool_document(d) for d in descriptors],
            )
        )
        parsed, schemas = growth(lambda: [dict(d.parameters) for d in descriptors])
    # the passes read what the file holds: counted again from plain copies, the same
    plain = [attrs.evolve(d, parameters=schema(i)) for i, d in enumerate(descriptors[:20])]
    assert kept[0][:20] == tool_costs(plain, "definition_tokens")
    assert schemas[7] == schema(7)
    # what the passes keep (two columns of numbers, the documents) is well under the
    # schemas they read, which reading them as a run does keeps
    assert passes < parsed / 2, (passes, parsed)


def test_a_schema_nested_past_what_marshal_packs_is_kept_as_it_is() -> None:
    from greenroom.tools.catalog import CatalogFile, CatalogSchema

    deep: dict[str, Any] = {}
    node = deep
    for _ in range(2_500):  # json reads about 1,000 levels; marshal packs 2,000
        node["items"] = {}
        node = node["items"]
    kept = CatalogSchema(deep, CatalogFile("c.jsonl", "0" * 40), 0)
    assert kept.peek() is deep and "items" in kept and dict(kept) == deep
