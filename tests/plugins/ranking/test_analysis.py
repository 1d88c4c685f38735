"""search-ranking beyond one flat document: fielded BM25 documents, split requests and
their merge, server-then-tool routing, the -v1 presets and the keys that configure them."""

from __future__ import annotations

from collections.abc import Sequence

import jsonschema
import numpy as np
import pytest

from greenroom import ScoredTool, SearchQuery, ToolDescriptor
from greenroom.config import ConfigError, structure_plugin_config
from greenroom_ranking import RankingConfig, RankingEngine, SearchRankingPlugin
from greenroom_ranking.analysis.fields import FIELDS, tool_fields
from greenroom_ranking.analysis.split import merge, split_request
from greenroom_ranking.evaluate import ranker_config


def q(text: str, n: int = 5) -> SearchQuery:
    return SearchQuery.parse(text, max_results=n)


def names(results: Sequence[ScoredTool]) -> list[str]:
    return [s.name for s in results]


def engine(**config: object) -> RankingEngine:
    return RankingEngine(RankingConfig(index_cache=False, **config), shared=False)  # type: ignore[arg-type]


def long_schema(words: int) -> dict[str, object]:
    """A schema of many parameters whose descriptions mention 'invoice' once among filler."""
    filler = " ".join(f"detail{i}" for i in range(words))
    props = {f"option_{i}": {"type": "string", "description": f"{filler} setting {i}"} for i in range(12)}
    props["note"] = {"type": "string", "description": "free text, may quote an invoice number"}
    return {"type": "object", "properties": props}


# ----------------------------------------------------------------------------- fields


def test_fields_read_parameters_descriptions_enums_and_group() -> None:
    tool = ToolDescriptor(
        "getAccount",
        "Read an account",
        {
            "type": "object",
            "properties": {
                "account_id": {"type": "string", "description": "The account"},
                "region": {"type": "string", "enum": ["emea", "apac"]},
                "filter": {"type": "object", "properties": {"since_date": {"description": "From this day"}}},
            },
        },
        group="billing",
    )
    got = dict(zip(FIELDS, tool_fields(tool), strict=True))
    assert got["name"] == "getAccount"
    assert got["parameters"].split() == ["account_id", "region", "filter", "since_date"]
    assert "From this day" in got["parameter_descriptions"]
    assert got["enums"].split() == ["emea", "apac"]
    assert got["group"] == "billing"


@pytest.mark.parametrize("document", ["fields", "flat"])
def test_a_short_name_match_ranks_above_a_long_schemas_incidental_match(document: str) -> None:
    tools = [
        ToolDescriptor("create_invoice", "Bill a customer", {"type": "object"}),
        ToolDescriptor("configure_printer", "Set up a printer", long_schema(40)),
        *(ToolDescriptor(f"tool_{i}", f"Unrelated thing number {i}", {"type": "object"}) for i in range(20)),
    ]
    ranked = names(engine(rankers=("bm25",), bm25_document=document).search(q("invoice"), tools))
    assert ranked[:2] == ["create_invoice", "configure_printer"]


def test_field_weights_change_what_a_field_is_worth() -> None:
    tools = [
        ToolDescriptor("lookup", "Find a record", {"type": "object", "properties": {"zip_code": {"type": "string"}}}),
        ToolDescriptor("zip_files", "Pack files together", {"type": "object"}),
        *(ToolDescriptor(f"tool_{i}", f"Unrelated thing number {i}", {"type": "object"}) for i in range(20)),
    ]
    params_heavy = engine(rankers=("bm25",), field_weights={"name": 1, "parameters": 5})
    names_only = engine(rankers=("bm25",), field_weights={"parameters": 0})
    assert names(params_heavy.search(q("zip"), tools))[0] == "lookup"
    assert names(names_only.search(q("zip"), tools)) == ["zip_files"]  # no parameter field: one hit


def test_enum_values_and_group_names_find_a_tool() -> None:
    tools = [
        ToolDescriptor(
            "export_report",
            "Export a report",
            {"type": "object", "properties": {"format": {"type": "string", "enum": ["pdf", "spreadsheet"]}}},
        ),
        ToolDescriptor("open_door", "Open a door", {"type": "object"}, group="smarthome"),
        *(ToolDescriptor(f"tool_{i}", f"Unrelated thing number {i}", {"type": "object"}) for i in range(20)),
    ]
    e = engine(rankers=("bm25",))
    assert names(e.search(q("spreadsheet"), tools)) == ["export_report"]
    assert names(e.search(q("smarthome"), tools)) == ["open_door"]
    assert names(engine(rankers=("bm25",), field_weights={"group": 0}).search(q("smarthome"), tools)) == []


# ----------------------------------------------------------------------------- split and merge


def test_a_request_for_several_tasks_is_split_into_them() -> None:
    text = (
        "Please retrieve the chemical properties of aspirin tablets. Then check the quality record of "
        "vehicle JC12 today, and finally create a new video advertisement for young adults."
    )
    assert split_request(text, min_words=3) == [
        "Please retrieve the chemical properties of aspirin tablets.",
        "check the quality record of vehicle JC12 today, and",
        "create a new video advertisement for young adults.",
    ]


def test_short_queries_and_filler_parts_are_not_split() -> None:
    assert split_request("weather forecast city", min_words=2) == []
    # the second sentence has no content words: one part is left, the request is ranked whole
    assert split_request("Find peer reviewed papers about coral reefs. Can you help me with that?", 3) == []


def test_merge_keeps_each_parts_best_near_the_top() -> None:
    ranks = np.arange(5)
    whole = (np.array([0, 1, 2]), np.array([9.0, 4.0, 1.0]))  # part two's tool is last in the whole request
    part_one = (np.array([0, 1]), np.array([4.0, 1.0]))
    part_two = (np.array([2, 3]), np.array([2.0, 0.5]))
    positions, scores = merge(whole, [part_one, part_two], 5, ranks, whole_weight=0.5)
    # each part's best first (1 + 0.5 * its share of the whole's best), then the rest
    assert positions.tolist() == [0, 2, 1, 3]
    assert scores.tolist() == pytest.approx([1.5, 1.0 + 0.5 / 9, 0.25 + 0.5 * 4 / 9, 0.25])


def test_split_requests_find_every_task_a_whole_ranking_misses() -> None:
    tools = [
        ToolDescriptor("getDrugProperties", "Retrieve the chemical properties of a drug", {"type": "object"}),
        ToolDescriptor("getDrugInteractions", "Retrieve interactions between two drugs", {"type": "object"}),
        ToolDescriptor("getDrugDosage", "Retrieve the dosage of a drug", {"type": "object"}),
        ToolDescriptor("getDrugPrice", "Retrieve the price of a drug", {"type": "object"}),
        ToolDescriptor("createVideoAd", "Create a video advertisement", {"type": "object"}),
        *(ToolDescriptor(f"tool_{i}", f"Unrelated thing number {i}", {"type": "object"}) for i in range(20)),
    ]
    text = (
        "Retrieve the chemical properties of the drug aspirin, with its dosage, price and interactions "
        "with other drugs. Then create a video."
    )
    whole = names(engine(split_queries=False).search(q(text, 2), tools))
    split = names(engine(split_queries=True, split_min_words=2).search(q(text, 2), tools))
    assert whole == ["getDrugProperties", "getDrugDosage"]  # the drug words outnumber the video's
    assert split == ["getDrugProperties", "createVideoAd"]  # each task's best tool


# ----------------------------------------------------------------------------- routing

SERVERS = [
    ToolDescriptor("list_items", "List the items", {"type": "object"}, group="kanban"),
    ToolDescriptor("move_item", "Move an item to a column", {"type": "object"}, group="kanban"),
    ToolDescriptor("list_uploads", "List the files", {"type": "object"}, group="storage"),
    ToolDescriptor("upload_file", "Upload a file", {"type": "object"}, group="storage"),
    ToolDescriptor("list_events", "List calendar events", {"type": "object"}, group="calendar"),
    ToolDescriptor("standalone", "A tool of no group that lists things", {"type": "object"}),
]


def test_routing_takes_tools_from_the_group_whose_description_matches() -> None:
    e = engine(rankers=("routing",), routing_groups=1)
    groups = {"kanban": "Boards, cards and sprints for agile teams", "storage": "Cloud drive for documents"}
    # the best group's tools only, the one matching the query itself first
    assert names(e.search(q("list sprint cards"), SERVERS, groups=groups)) == ["list_items", "move_item"]
    assert names(e.search(q("list documents"), SERVERS, groups=groups)) == ["list_uploads", "upload_file"]
    # without descriptions no group's document says "sprints": routing abstains
    assert names(e.search(q("sprints"), SERVERS)) == []
    assert names(e.search(q("sprints"), SERVERS, groups=groups)) == ["list_items", "move_item"]


def test_routing_fused_with_the_flat_ranking_lifts_the_right_servers_tools() -> None:
    groups = {"storage": "Cloud drive for documents and photos"}
    flat = engine(rankers=("bm25",))
    routed = engine(rankers=("bm25", "routing"), weights={"bm25": 1.0, "routing": 1.0})
    assert names(flat.search(q("list photos"), SERVERS, groups=groups))[0] == "list_items"  # by name
    assert names(routed.search(q("list photos"), SERVERS, groups=groups))[0] == "list_uploads"
    # every flat result stays: routing only adds
    assert set(names(flat.search(q("list photos", 10), SERVERS))) <= set(
        names(routed.search(q("list photos", 10), SERVERS, groups=groups))
    )


# ----------------------------------------------------------------------------- presets and config


def test_v1_presets_are_ranking_as_it_was() -> None:
    v1 = ranker_config("default-v1")
    assert (v1.bm25_document, v1.split_queries, v1.rankers) == ("flat", False, ("keyword", "bm25"))
    assert ranker_config("bm25-v1").rankers == ("bm25",) and ranker_config("bm25-v1").bm25_document == "flat"
    now = ranker_config("default")
    assert (now.bm25_document, now.split_queries) == ("fields", True)
    with pytest.raises(ValueError, match="-v1"):
        ranker_config("nope-v1")


def test_new_keys_are_validated_in_the_schema_and_when_structured() -> None:
    schema = SearchRankingPlugin.config_schema()
    good = {"bm25_document": "flat", "field_weights": {"enums": 0}, "split_queries": False, "routing_groups": 3}
    jsonschema.validate({**good, "rankers": ["bm25", "routing"]}, schema)
    bad_values: list[dict[str, object]] = [
        {"bm25_document": "bag"},
        {"field_weights": {"title": 1}},
        {"field_weights": {"name": -1}},
        {"split_min_words": 0},
        {"split_whole_weight": -0.5},
        {"routing_groups": 0},
        {"split_query": True},  # unknown key
    ]
    for bad in bad_values:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(bad, schema)
        with pytest.raises((ConfigError, ValueError)):
            structure_plugin_config("search-ranking", RankingConfig, bad, {})
    cfg = structure_plugin_config("search-ranking", RankingConfig, good, {})
    assert cfg.field_weights == {"enums": 0} and cfg.bm25_document == "flat" and cfg.routing_groups == 3


# ----------------------------------------------------------------------------- build and quality


# tools cut into words, and occurrences summed, this many at a time
@pytest.mark.parametrize(("batch", "chunk"), [(1, 1), (3, 2), (2048, 1 << 18)])
def test_the_fast_fielded_build_equals_the_plain_one(batch: int, chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    from greenroom_ranking.analysis import fields, occurrences
    from greenroom_ranking.analysis.fields import field_weights, fielded_postings, weighted_postings

    monkeypatch.setattr(occurrences, "BATCH", batch)
    monkeypatch.setattr(fields, "CHUNK", chunk)
    from greenroom_ranking.text import analyze_documents

    tools = [
        ToolDescriptor("getYouTubeVideo", "Find a YouTube video by its URLs", long_schema(3), group="media"),
        ToolDescriptor("list_APIs", "List the APIs\x1f of a project", {"type": "object"}),  # a separator inside
        ToolDescriptor("empty", "", {"type": "object"}),
        ToolDescriptor("send_mail", "Send an e-mail to someone", {"type": "object"}, group="mail"),
    ]
    weights = field_weights({"enums": 0})
    size, (vocab, data, indices, indptr) = fielded_postings(tools, weights, 1.2, 0.75, parameters=True)
    nested = [[analyze_documents([text], joined=True)[0] for text in tool_fields(t)] for t in tools]
    vocab2, data2, indices2, indptr2 = weighted_postings(nested, weights, 1.2, 0.75)

    def entries(v: dict[str, int], d: np.ndarray, i: np.ndarray, p: np.ndarray) -> dict[tuple[str, int], float]:
        return {(t, int(i[k])): float(d[k]) for t, j in v.items() for k in range(p[j], p[j + 1])}

    assert size == 4
    assert entries(vocab, data, indices, indptr) == entries(vocab2, data2, indices2, indptr2)
    assert {"youtub", "api", "url"} <= set(vocab)  # mixed-case words and acronym plurals kept whole


def test_the_hooks_pass_a_runs_group_descriptions_to_routing() -> None:
    import types

    import anyio

    plugin = SearchRankingPlugin(RankingConfig(rankers=("routing",), routing_groups=1, index_cache=False))
    views = {
        "kanban": types.SimpleNamespace(id="kanban", description="Boards, cards and sprints for agile teams"),
        "storage": types.SimpleNamespace(id="storage", description="Cloud drive for documents"),
    }
    ctx = types.SimpleNamespace(
        groups=views, priors=types.SimpleNamespace(get=lambda _name: 0.0), catalog=lambda: SERVERS
    )

    async def search(run: object) -> list[str]:
        query = q("sprints")
        ranking = await plugin.greenroom_rank_tools(run, query, SERVERS)  # type: ignore[arg-type]
        found = plugin.greenroom_search_tools(run, query, SERVERS, [ranking] if ranking else [])  # type: ignore[arg-type]
        return names(found or [])

    assert anyio.run(search, ctx) == ["list_items", "move_item"]
    assert anyio.run(search, None) == []  # no run, no descriptions: no group says "sprints"
