"""The simulated agent's arguments: valid for every usable tool schema of the shared
datasets (what docs/eval.md promises), filled as docs/eval.md says (const, examples,
default, enum, then a plain value within bounds and well-known formats), the same every
time, and bounded on deep or odd schemas."""

from __future__ import annotations

import json
from typing import Any

import jsonschema
import pytest
from support.gr_testutil import DATASETS

from greenroom_lab.eval.instances import FORMATS, MAX_DEPTH, arguments_for

CATALOGS = [DATASETS / name / "tools.jsonl" for name in ("github_mcp", "metatool", "seal_tools")]


def valid(schema: dict[str, Any], value: Any) -> bool:
    return jsonschema.validators.validator_for(schema)(schema).is_valid(value)


@pytest.mark.skipif(not all(p.exists() for p in CATALOGS), reason="../shared/datasets not present")
def test_every_usable_schema_of_the_shared_datasets_gets_valid_arguments() -> None:
    checked, wrong = 0, []
    for catalog in CATALOGS:
        for line in catalog.read_text(encoding="utf-8").splitlines():
            tool = json.loads(line)
            schema = tool["parameters"]
            if schema is None:
                continue
            try:
                jsonschema.validators.validator_for(schema).check_schema(schema)
            except jsonschema.SchemaError:
                continue  # the runtime refuses it too: no arm can call it
            checked += 1
            if not valid(schema, arguments_for(schema)):
                wrong.append(f"{catalog.parent.name}: {tool['name']}")
    assert checked > 4000 and not wrong, wrong[:10]


def obj(**props: Any) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": list(props)}


@pytest.mark.parametrize(
    ("prop", "value"),
    [
        ({"type": "string", "const": "c", "examples": ["e"], "default": "d", "enum": ["n"]}, "c"),
        ({"type": "string", "examples": ["e"], "default": "d", "enum": ["n"]}, "e"),
        ({"type": "string", "default": "d", "enum": ["n", "m"]}, "d"),
        ({"type": "string", "enum": ["n", "m"]}, "n"),
        ({"type": "integer", "minimum": 5, "maximum": 9}, 5),
        ({"type": "integer", "exclusiveMinimum": 5}, 6),
        ({"type": "number", "maximum": -3}, -3.0),
        ({"type": "number"}, 1.0),
        ({"type": "boolean"}, False),
        ({"type": "null"}, None),
        ({"type": ["null", "integer"]}, 1),
        ({"type": "string", "minLength": 12}, "examplexxxxx"),
        ({"type": "string", "maxLength": 3}, "exa"),
        ({"type": "array", "items": {"type": "integer"}, "minItems": 2}, [1, 1]),
        ({"type": "array", "items": {"type": "string"}}, []),
        ({"anyOf": [{"type": "integer"}, {"type": "string"}]}, 1),
        ({"oneOf": [{"type": "boolean"}, {"type": "string"}]}, False),
        ({"properties": {"a": {"type": "integer"}}, "required": ["a"]}, {"a": 1}),
        ({"allOf": [obj(a={"type": "integer"}), obj(b={"type": "boolean"})]}, {"a": 1, "b": False}),
        ({"description": "no type at all"}, "example"),
    ],
)
def test_each_property_is_filled_as_the_docs_say(prop: dict[str, Any], value: Any) -> None:
    assert arguments_for(obj(x=prop)) == {"x": value}


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_well_known_formats_get_values_a_format_checker_accepts(fmt: str) -> None:
    schema = obj(x={"type": "string", "format": fmt})
    args = arguments_for(schema)
    checker = jsonschema.Draft202012Validator.FORMAT_CHECKER
    jsonschema.Draft202012Validator(schema, format_checker=checker).validate(args)
    assert args["x"] == FORMATS[fmt]


def test_optional_properties_are_left_out_and_odd_schemas_give_no_arguments() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "integer"}}, "required": ["b"]}
    assert arguments_for(schema) == {"b": 1}
    for odd in (None, {}, {"type": "string"}, {"type": "object", "required": "b"}):
        assert arguments_for(odd) == {}  # type: ignore[arg-type]
    assert arguments_for({"type": "object", "required": ["ghost"]}) == {"ghost": "example"}


def test_deep_schemas_stop_at_the_depth_limit() -> None:
    schema: dict[str, Any] = {"type": "integer"}
    for _ in range(MAX_DEPTH * 3):
        schema = obj(inner=schema)
    args = arguments_for(schema)
    depth = 0
    while isinstance(args, dict) and args:
        args, depth = args["inner"], depth + 1
    assert depth == MAX_DEPTH and args == {}  # deeper required objects are left empty


def test_unreasonable_bounds_are_not_followed() -> None:
    schema = obj(s={"type": "string", "minLength": 10**9}, a={"type": "array", "minItems": 10**9})
    assert arguments_for(schema) == {"s": "example", "a": []}  # no gigabyte of text, no billion items


def test_the_same_schema_always_gives_the_same_arguments() -> None:
    schema = obj(when={"type": "string", "format": "date"}, n={"type": "integer", "minimum": 2})
    assert arguments_for(schema) == arguments_for(json.loads(json.dumps(schema))) == {"when": "2025-01-31", "n": 2}
