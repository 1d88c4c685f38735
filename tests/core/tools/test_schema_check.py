"""Checking a tool's parameter schema: what the walk finds (shape, types, regexes,
references, depth), what the meta-schema check adds, that the one judgement (both) is
what a run and a config check ask alike, that jsonschema-rs's quick yes never differs
from jsonschema's, and that a schema both checks pass can validate any arguments without
raising."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from support.gr_testutil import DATASETS

from greenroom.tools.schema.check import (
    MAX_SCHEMA_DEPTH,
    catalog_problems,
    compile_validator,
    full_problem,
    load_problem,
    meta_schema_problem,
    schema_problem,
)
from greenroom.tools.schema.meta import _fast_accept
from greenroom.tools.schema.problem import SchemaFault


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props}


@pytest.mark.parametrize(
    ("schema", "fault", "where", "says"),
    [
        ([{"type": "string"}], SchemaFault.NOT_A_SCHEMA, "#", "must be a JSON object, not list"),
        ("object", SchemaFault.NOT_A_SCHEMA, "#", "not str"),
        (obj(q={"type": "strng"}), SchemaFault.UNKNOWN_TYPE, "#/properties/q/type", "unknown type 'strng'"),
        (obj(q={"type": ["string", 5]}), SchemaFault.UNKNOWN_TYPE, "#/properties/q/type", "unknown type 5"),
        (obj(q={"type": "string", "pattern": "a("}), SchemaFault.BAD_PATTERN, "#/properties/q/pattern", "'a('"),
        (obj(q={"pattern": 7}), SchemaFault.BAD_PATTERN, "#/properties/q/pattern", "must be a string"),
        (
            {"type": "object", "patternProperties": {"^x(": {}}},
            SchemaFault.BAD_PATTERN,
            "#/patternProperties",
            "'^x(' is not a valid regular expression",
        ),
        (obj(q={"$ref": "#/$defs/missing"}), SchemaFault.DANGLING_REF, "#/properties/q/$ref", "points to nothing"),
        (obj(q={"$ref": "#nowhere"}), SchemaFault.DANGLING_REF, "#/properties/q/$ref", "points to nothing"),
        (
            obj(q={"$ref": "https://example.invalid/s.json"}),
            SchemaFault.DANGLING_REF,
            "#/properties/q/$ref",
            "remote schemas are never fetched",
        ),
        ({"type": "object", "$ref": "#"}, SchemaFault.REF_CYCLE, "#/$ref", "never ends"),
        (
            {
                "type": "object",
                "properties": {"x": {"$ref": "#/$defs/a"}},
                "$defs": {"a": {"allOf": [{"$ref": "#/$defs/b"}]}, "b": {"anyOf": [{"$ref": "#/$defs/a"}]}},
            },
            SchemaFault.REF_CYCLE,
            ("#/$defs/a/allOf/0/$ref", "#/$defs/b/anyOf/0/$ref"),  # either reference on the loop
            "lead back",
        ),
        (obj(q=5), SchemaFault.NOT_A_SCHEMA, "#/properties/q", "object or a boolean, not int"),
        ({"type": "object", "properties": [1]}, SchemaFault.BAD_KEYWORD, "#/properties", "object of schemas"),
        (obj(q={"minimum": "3"}), SchemaFault.BAD_KEYWORD, "#/properties/q/minimum", "must be a number"),
        (obj(q={"multipleOf": 0}), SchemaFault.BAD_KEYWORD, "#/properties/q/multipleOf", "greater than 0"),
        (obj(q={"maxLength": "x"}), SchemaFault.BAD_KEYWORD, "#/properties/q/maxLength", "non-negative integer"),
        ({"type": "object", "required": True}, SchemaFault.BAD_KEYWORD, "#/required", "list of property names"),
        (obj(q={"enum": 3}), SchemaFault.BAD_KEYWORD, "#/properties/q/enum", "must be a list"),
        (obj(q={"anyOf": {"type": "string"}}), SchemaFault.BAD_KEYWORD, "#/properties/q/anyOf", "non-empty list"),
        (
            obj(q={"type": "array", "items": [{"type": "string"}]}),
            SchemaFault.BAD_KEYWORD,
            "#/properties/q/items",
            "'prefixItems'",
        ),
    ],
)
def test_each_kind_of_broken_schema_is_found_at_load(
    schema: Any, fault: SchemaFault, where: str | tuple[str, ...], says: str
) -> None:
    problem = load_problem(schema)
    assert problem is not None
    assert problem.fault is fault
    assert problem.where in ((where,) if isinstance(where, str) else where)
    assert says in problem.detail
    assert str(problem) == f"{problem.where}: {problem.detail}"


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object"},
        obj(q={"type": "string", "pattern": "^[a-z]+$"}, n={"type": ["integer", "null"], "minimum": 0}),
        {"type": "object", "properties": {"q": {"$ref": "#/$defs/Q"}}, "$defs": {"Q": {"type": "string"}}},
        {"type": "object", "properties": {"a": {"$anchor": "here"}, "b": {"$ref": "#here"}}},
        {"type": "object", "properties": {"a": {"$ref": "https://json-schema.org/draft/2020-12/schema"}}},
        # a tuple of item schemas is right in draft 7
        {"$schema": "http://json-schema.org/draft-07/schema#", "type": "object", "properties": {"t": {"items": [{}]}}},
        # a reference resolved against the $id of the subschema it sits in, as jsonschema does
        {
            "$id": "https://example.invalid/root",
            "type": "object",
            "properties": {
                "a": {"$id": "sub/", "$defs": {"y": {"type": "string"}}, "properties": {"b": {"$ref": "#/$defs/y"}}}
            },
        },
        {"type": "object", "properties": {"flag": True, "never": False}},
        # recursion that descends into the arguments ends with them
        {"type": "object", "properties": {"child": {"$ref": "#"}, "kids": {"type": "array", "items": {"$ref": "#"}}}},
    ],
)
def test_valid_schemas_have_no_problem(schema: dict[str, Any]) -> None:
    assert load_problem(schema) is None
    assert meta_schema_problem(schema) is None


def test_a_reference_outside_its_id_scope_is_dangling_as_jsonschema_finds_it() -> None:
    schema = {
        "$id": "https://example.invalid/root",
        "type": "object",
        "$defs": {"y": {"type": "string"}},
        "properties": {"a": {"$id": "sub/", "properties": {"b": {"$ref": "#/$defs/y"}}}},
    }
    problem = load_problem(schema)
    assert problem is not None and problem.fault is SchemaFault.DANGLING_REF
    with pytest.raises(jsonschema.exceptions._RefResolutionError):
        list(compile_validator(schema).iter_errors({"a": {"b": 1}}))


def test_a_schema_nested_past_the_bound_is_found_without_recursion() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(5_000):  # far past what a recursive walk (or check_schema) survives
        schema = {"type": "object", "properties": {"a": schema}}
    problem = load_problem(schema)
    assert problem is not None and problem.fault is SchemaFault.TOO_DEEP
    assert f"more than {MAX_SCHEMA_DEPTH} levels" in problem.detail
    assert len(problem.where) < 200  # the pointer keeps its ends, not 5,000 keys


def test_what_only_the_meta_schema_sees_is_found_by_it() -> None:
    schema = obj(tags={"type": "array", "uniqueItems": "yes"})
    assert load_problem(schema) is None
    problem = meta_schema_problem(schema)
    assert problem is not None and problem.fault is SchemaFault.META_SCHEMA
    assert problem.where == "#/properties/tags/uniqueItems"
    # the dialect the schema names is the one checked
    draft4 = {"$schema": "http://json-schema.org/draft-04/schema#", "type": "object", "exclusiveMinimum": 3}
    assert meta_schema_problem(draft4) is not None


def test_a_remote_reference_is_never_fetched() -> None:
    validator = compile_validator(obj(q={"$ref": "http://127.0.0.1:9/never.json"}))
    with pytest.raises(jsonschema.exceptions._RefResolutionError, match="Unresolvable"):
        list(validator.iter_errors({"q": 1}))


@pytest.mark.skipif(not DATASETS.exists(), reason="../shared/datasets not present")
@pytest.mark.parametrize("dataset", ["github_mcp", "metatool", "seal_tools"])
def test_the_real_catalogs_load_without_a_problem(dataset: str) -> None:
    lines = (DATASETS / dataset / "tools.jsonl").read_text(encoding="utf-8").splitlines()
    schemas = [json.loads(line).get("parameters") or {"type": "object"} for line in lines if line.strip()]
    assert [load_problem(s) for s in schemas] == [None] * len(schemas)


# ---------------------------------------------------------------------------- properties

_json_scalars = st.none() | st.booleans() | st.integers(-5, 5) | st.floats(-5, 5, allow_nan=False) | st.text(max_size=4)
_keywords = st.sampled_from(
    [
        "type",
        "properties",
        "items",
        "prefixItems",
        "required",
        "enum",
        "const",
        "pattern",
        "patternProperties",
        "minimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxItems",
        "anyOf",
        "allOf",
        "not",
        "additionalProperties",
        "$ref",
        "$defs",
        "dependencies",
        "uniqueItems",
        "if",
        "then",
    ]
)
_values = st.recursive(
    _json_scalars | st.sampled_from(["string", "object", "array", "integer", "#", "#/$defs/a", "[a-", "^a+$"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keywords | st.text(max_size=3), inner, max_size=4),
    max_leaves=12,
)
_schemas = st.dictionaries(_keywords, _values, max_size=5)
_instances = st.recursive(
    _json_scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=3), inner, max_size=3)
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_values | _schemas, instance=_instances)
def test_checking_never_raises_and_a_schema_that_passes_validates_anything(schema: Any, instance: Any) -> None:
    problem = load_problem(schema)
    if problem is not None or meta_schema_problem(schema) is not None:
        return
    # both checks passed: validating any JSON value with it must answer, not raise
    list(compile_validator(schema).iter_errors(instance))


# ------------------------------------------------------------ one judgement, run and check

EXAMPLES_AS_TEXT = obj(kind={"type": "string", "description": "e.g. music, dance", "examples": "music, dance"})
"""The kind of schema a config check rejected and a run took (four in seal_tools): the
walk finds nothing, the 2020-12 meta-schema says ``examples`` must be an array."""


def test_a_schema_only_the_meta_schema_rejects_is_judged_invalid_by_the_one_judgement() -> None:
    assert load_problem(EXAMPLES_AS_TEXT) is None
    problem = schema_problem(EXAMPLES_AS_TEXT)
    assert problem is not None and problem.fault is SchemaFault.META_SCHEMA
    assert problem.where == "#/properties/kind/examples" and "not of type 'array'" in problem.detail
    assert full_problem is schema_problem


def test_a_catalog_is_judged_by_the_one_judgement_whoever_asks(tmp_path: Path) -> None:
    from greenroom._support.digest_cache import DigestCache
    from greenroom.tools.catalog import read_catalog

    path = tmp_path / "c.jsonl"
    records = [
        {"name": "fine", "parameters": obj(q={"type": "string"})},
        {"name": "odd", "parameters": EXAMPLES_AS_TEXT},
        {"name": "odd_again", "parameters": EXAMPLES_AS_TEXT},  # judged once, found at both
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    cache = DigestCache(tmp_path / "cache")
    run = catalog_problems(read_catalog(path), cache=cache)  # what a run asks
    check = catalog_problems(read_catalog(path), full=True, cache=cache)  # what a config check asks
    assert list(run) == list(check) == [1, 2] and run[1] == check[2] == schema_problem(EXAMPLES_AS_TEXT)


def test_a_catalog_pass_judges_each_schema_as_schema_problem_does(tmp_path: Path) -> None:
    """Repeated schemas are judged once (found by their packed bytes); none is taken for
    another that differs, and schemas that are not packed are judged too."""
    from greenroom._support.digest_cache import DigestCache
    from greenroom.tools.base import ToolDescriptor
    from greenroom.tools.catalog import CatalogFile, CatalogSchema

    deep: dict[str, Any] = {"type": "object"}
    node = deep
    for _ in range(2_500):  # deeper than marshal packs: kept as it is, judged as it is
        node["not"] = {}
        node = node["not"]
    catalog = CatalogFile("c.jsonl", "1" * 40)
    schemas: list[Any] = [
        obj(q={"type": "string"}),
        obj(q={"type": "strnig"}),
        obj(q={"type": "string"}),
        EXAMPLES_AS_TEXT,
        obj(q={"type": "strnig"}),
        deep,
        obj(q={"type": "string", "pattern": "("}),
    ]
    for i, schema in enumerate(schemas):
        packed = CatalogSchema(schema, catalog, i)
        catalog.descriptors.append(ToolDescriptor(f"t{i}", "", packed if i != 2 else dict(schema)))
    assert catalog.descriptors[5].parameters.packed is None  # type: ignore[attr-defined]
    found = catalog_problems(catalog, cache=DigestCache(tmp_path / "cache"))
    expected = {i: p for i, s in enumerate(schemas) if (p := schema_problem(s)) is not None}
    assert found == expected and sorted(found) == [1, 3, 4, 5, 6]


def test_a_dialect_that_is_not_built_in_is_judged_without_fetching_it() -> None:
    schema = {"$schema": "http://127.0.0.1:9/my-dialect", "type": "object", "examples": "x"}
    assert not _fast_accept(schema)  # jsonschema-rs would fetch it: jsonschema decides
    problem = meta_schema_problem(schema)  # as 2020-12, the default
    assert problem is not None and problem.where == "#/examples"


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(schema=_schemas | st.dictionaries(st.sampled_from(["examples", "default", "title", "$comment"]), _values))
def test_jsonschema_rs_accepts_no_schema_jsonschema_rejects(schema: dict[str, Any]) -> None:
    if _fast_accept(schema):
        validator = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
        assert jsonschema.exceptions.best_match(validator(validator.META_SCHEMA).iter_errors(schema)) is None
