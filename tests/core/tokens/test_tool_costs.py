"""Per-tool token costs are exact (the counts of the same texts), come from the catalog's
column once it is known (in the process or on disk), cost a request only its own tools
on a cold cache, and request accounting reports them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from greenroom._support.digest_cache import DigestCache, use_digest_cache, work
from greenroom.models import ModelRequest, SystemSection
from greenroom.tokens.accounting import RequestAccounting
from greenroom.tokens.counting import count_tokens, parameters_json, tool_json
from greenroom.tokens.tool_costs import COST_FIELDS, LOOSE_BATCH, namespace, tool_cost, tool_costs
from greenroom.tools import ToolDescriptor
from greenroom.tools.catalog import read_catalog


def expected(d: ToolDescriptor, field: str) -> int:
    if field == "definition_tokens":
        return count_tokens(tool_json(d))
    if field == "parameters_tokens":
        return count_tokens(parameters_json(d.parameters))
    if field == "parameters_chars":
        return len(parameters_json(d.parameters))
    return count_tokens(d.name if field == "name_tokens" else d.description)


def write_catalog(path: Path, n: int, offset: int = 0) -> Path:
    lines = []
    for i in range(offset, offset + n):
        props = {
            f"p{j}": {"type": "string", "description": f"Value {j} of tool {i}, naïve 中文."} for j in range(i % 4)
        }
        lines.append(
            json.dumps(
                {
                    "name": f"tool_{i}",
                    "description": f"Does thing {i}.",
                    "parameters": {"type": "object", "properties": props},
                }
            )
        )
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def cache(tmp_path: Path) -> Any:
    with use_digest_cache(DigestCache(tmp_path / "cache")) as c:
        yield c


@pytest.mark.parametrize("field", COST_FIELDS)
def test_every_field_is_the_exact_count_of_its_text(tmp_path: Path, cache: DigestCache, field: Any) -> None:
    catalog = read_catalog(write_catalog(tmp_path / "c.jsonl", 40))
    loose = [ToolDescriptor("py_tool", "A Python tool.", {"type": "object", "properties": {"x": {"type": "integer"}}})]
    mixed = [*catalog.descriptors, *loose]
    assert tool_costs(mixed, field) == [expected(d, field) for d in mixed]
    assert tool_cost(loose[0], field) == expected(loose[0], field)


def test_a_catalog_column_is_counted_once_and_a_new_process_counts_nothing(tmp_path: Path, cache: DigestCache) -> None:
    path = write_catalog(tmp_path / "c.jsonl", 200)
    catalog = read_catalog(path)
    before = work["token counts"]
    costs = tool_costs(catalog.descriptors, "parameters_tokens")
    assert work["token counts"] - before == 200
    assert tool_costs(catalog.descriptors[::-1], "parameters_tokens") == costs[::-1]
    assert work["token counts"] - before == 200  # the column is known in this process
    assert cache.get(namespace("parameters_tokens"), catalog.digest) is not None

    fresh = read_catalog(path)  # what a new process reads: the column comes from disk
    regrouped = [attrs.evolve(d, group="g") for d in fresh.descriptors]
    assert tool_costs(regrouped, "parameters_tokens") == costs
    assert work["token counts"] - before == 200


def test_a_few_tools_of_a_big_catalog_cost_only_themselves_on_a_cold_cache(tmp_path: Path, cache: DigestCache) -> None:
    catalog = read_catalog(write_catalog(tmp_path / "c.jsonl", 400))
    few = catalog.descriptors[10:13]
    before = work["token counts"]
    assert tool_costs(few, "definition_tokens") == [expected(d, "definition_tokens") for d in few]
    assert tool_costs(few, "definition_tokens") == [expected(d, "definition_tokens") for d in few]
    assert work["token counts"] - before == 3  # not the other 397, and not twice
    assert cache.get(namespace("definition_tokens"), catalog.digest) is None


def test_tools_asked_for_one_by_one_end_up_as_the_whole_column_on_disk(tmp_path: Path, cache: DigestCache) -> None:
    catalog = read_catalog(write_catalog(tmp_path / "c.jsonl", 80))
    before = work["token counts"]
    costs = [tool_cost(d, "name_tokens") for d in catalog.descriptors]  # a plugin's per-tool loop
    assert costs == [expected(d, "name_tokens") for d in catalog.descriptors]
    assert work["token counts"] - before == 80  # each counted once, whichever way it was asked
    assert cache.get(namespace("name_tokens"), catalog.digest) == costs


def test_a_renamed_catalog_descriptor_is_counted_as_what_it_now_is(tmp_path: Path, cache: DigestCache) -> None:
    catalog = read_catalog(write_catalog(tmp_path / "c.jsonl", 20))
    renamed = attrs.evolve(catalog.descriptors[3], name="server__tool_3_with_a_much_longer_name")
    assert tool_costs([renamed], "definition_tokens") == [expected(renamed, "definition_tokens")]
    assert tool_costs([renamed], "name_tokens") == [expected(renamed, "name_tokens")]


def test_a_large_batch_of_loose_descriptors_is_kept_on_disk(cache: DigestCache) -> None:
    def batch() -> list[ToolDescriptor]:
        return [ToolDescriptor(f"mcp__t{i}", f"Remote tool {i}.") for i in range(LOOSE_BATCH)]

    first = tool_costs(batch(), "definition_tokens")
    before = work["token counts"]
    assert tool_costs(batch(), "definition_tokens") == first  # new objects, same texts
    assert work["token counts"] == before


def test_unknown_fields_are_refused() -> None:
    with pytest.raises(ValueError, match="unknown cost field"):
        tool_costs([], "colour")  # type: ignore[arg-type]


def test_request_accounting_reports_the_costs_of_what_is_sent(tmp_path: Path, cache: DigestCache) -> None:
    catalog = read_catalog(write_catalog(tmp_path / "c.jsonl", 30))
    tools = tuple(catalog.descriptors[:5])
    acc = RequestAccounting()
    sent = acc.describe_request(ModelRequest((SystemSection("agent", "Hi."),), tools, (), step=1))
    assert sent.tools_tokens == sum(count_tokens(tool_json(d)) for d in tools)
    assert sent.tool_names == tuple(d.name for d in tools)
    grown = (*tools, catalog.descriptors[9])
    later = acc.describe_request(ModelRequest((SystemSection("agent", "Hi."),), grown, (), step=2))
    assert later.tools_tokens == sent.tools_tokens + count_tokens(tool_json(catalog.descriptors[9]))
    assert later.prefix_hash != sent.prefix_hash
