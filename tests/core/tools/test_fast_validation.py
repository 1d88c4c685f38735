"""The Rust fast path for a call's arguments only ever accepts what jsonschema accepts:
the verdict and the problems the model reads are jsonschema's, whatever the schema and
arguments, and nothing is fetched."""

from __future__ import annotations

import socket
from typing import Any

import jsonschema
import jsonschema_rs
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from greenroom.tools import FunctionTool, ToolDescriptor
from greenroom.tools.schema import fast_validation
from greenroom.tools.schema.check import compile_validator, validator_class
from greenroom.tools.schema.fast_validation import FastValidator, compile_fast, plain_regex
from greenroom.tools.toolset import ToolSet, UnusableToolError, validation_problems

BIG = 2**53

SCHEMAS: dict[str, dict[str, Any]] = {
    "types": {
        "type": "object",
        "properties": {
            "a": {"type": "string"},
            "n": {"type": "integer"},
            "x": {"type": ["number", "null"]},
            "b": {"type": "boolean"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
    },
    "enum_const": {
        "properties": {
            "a": {"enum": [1, "1", None, [1], {"k": True}]},
            "b": {"const": 1},
            "n": {"const": True},
            "x": {"enum": [1.0, False, 0]},
            "tags": {"not": {"const": 1}},
        }
    },
    "patterns": {
        "properties": {
            "a": {"type": "string", "pattern": "^a$"},
            "b": {"pattern": "^\\d+$"},
            "x": {"not": {"pattern": "^\\s*$"}},
            "n": {"pattern": "^\\D$"},
            "kind": {"not": {"pattern": "^\\w+$"}},
            "tags": {"items": {"pattern": "^[a-z]{1,2}[^ab]?$"}},
        }
    },
    "pattern_properties": {
        "patternProperties": {"^\\d$": {"type": "string"}, "^[a-z]$": {"type": "integer"}},
        "additionalProperties": False,
        "propertyNames": {"pattern": "^.?$"},
    },
    "multiple_of_fractions": {
        "properties": {"a": {"multipleOf": 0.1}, "b": {"multipleOf": 0.01}, "x": {"not": {"multipleOf": 0.1}}}
    },
    "multiple_of_whole": {
        "properties": {"n": {"multipleOf": 3}, "x": {"multipleOf": 2.0}, "tags": {"not": {"multipleOf": 3}}}
    },
    "big_bounds": {
        "properties": {
            "n": {"minimum": -(2**70), "maximum": 2**64},
            "a": {"exclusiveMaximum": BIG + 1},
            "x": {"maximum": BIG, "minimum": 0.5},
            "b": {"not": {"exclusiveMinimum": 2**63}},
            "kind": {"not": {"maximum": 2**70 - 1}},
        }
    },
    "lengths": {"properties": {"a": {"minLength": 2}, "b": {"maxLength": 1}, "x": {"not": {"maxLength": 1}}}},
    "unique": {"properties": {"tags": {"type": "array", "uniqueItems": True}, "a": {"not": {"uniqueItems": True}}}},
    "required_additional": {
        "type": "object",
        "required": ["a", "n"],
        "properties": {"a": {}, "n": {}},
        "additionalProperties": {"type": "integer"},
    },
    "prefix_items": {
        "properties": {
            "tags": {"type": "array", "prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False}
        }
    },
    "refs": {
        "$defs": {
            "pos": {"type": "integer", "minimum": 0},
            "node": {"type": "object", "properties": {"kind": {"$ref": "#/$defs/pos"}, "x": {"$ref": "#/$defs/node"}}},
        },
        "properties": {"n": {"$ref": "#/$defs/pos"}, "x": {"$ref": "#/$defs/node"}},
    },
    "any_one_of": {
        "properties": {
            "a": {"anyOf": [{"type": "string", "maxLength": 1}, {"type": "integer"}]},
            "x": {"oneOf": [{"type": "number"}, {"type": "integer"}]},
            "b": {"oneOf": [{"pattern": "^a$"}, {"pattern": "a"}]},
        }
    },
    "nested": {
        "type": "object",
        "properties": {
            "x": {
                "type": "object",
                "properties": {
                    "kind": {"enum": ["a", "b"]},
                    "tags": {"type": "array", "items": {"type": "object", "required": ["a"]}},
                },
                "required": ["kind"],
            }
        },
    },
    "draft7_if_items": {
        "$schema": "http://json-schema.org/draft-07/schema#",
        "properties": {
            "tags": {"items": [{"type": "integer"}], "additionalItems": False},
            "a": {"if": {"type": "string"}, "then": {"minLength": 2}, "else": {"type": "integer"}},
        },
    },
    "draft4_exclusive": {
        "$schema": "http://json-schema.org/draft-04/schema#",
        "properties": {
            "n": {"maximum": 5, "exclusiveMaximum": True},
            "x": {"minimum": 0},
            "b": {"type": "integer"},  # 1.0 is no integer in draft 4
            "kind": {"not": {"type": "integer"}},
        },
    },
    "contains_unevaluated": {
        "properties": {"tags": {"contains": {"type": "integer"}, "maxContains": 1}},
        "allOf": [{"properties": {"a": {}}}],
        "unevaluatedProperties": {"type": "string"},
    },
}
NO_FAST_PATH = {"multiple_of_fractions"}  # Python's float division disagrees with Rust's

KEYS = ["a", "b", "n", "x", "tags", "kind", "1", "٣", "z"]
NASTY = ["a", "a\n", "٣", "\ufeff", "😀", "é", "\x1c", "", "ab", "1", " ", "\u00a0"]  # where regexes differ
TEXT = st.one_of(
    st.sampled_from(NASTY), st.text(alphabet=[c for c in NASTY if len(c) == 1] + ["b", "Z", "-", "_", "\n"], max_size=3)
)
NUMBERS = st.one_of(
    st.integers(-5, 5),
    st.sampled_from([BIG - 1, BIG, BIG + 1, 2**63, 2**64, 2**64 + 1, 2**70, 2**70 - 1, -(2**70)]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0.3, 0.1, 19.99, 1.0, 2.0, 0.5, 6.0, 1e300, float(BIG), float(2**70)]),
)
SCALARS = st.one_of(TEXT, NUMBERS, st.sampled_from([None, True, False]))
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.one_of(st.sampled_from(KEYS), TEXT), inner, max_size=3)
    ),
    max_leaves=6,
)
# each known key present half the time, so every property of a schema is exercised often
ARGS = st.builds(
    lambda known, other: {**other, **known},
    st.fixed_dictionaries({}, optional={key: st.one_of(SCALARS, VALUES) for key in KEYS}),
    st.dictionaries(TEXT, SCALARS, max_size=2),
)


def toolset(schema: dict[str, Any]) -> ToolSet:
    return ToolSet([FunctionTool(lambda **kw: "ran", ToolDescriptor("t", "A tool.", schema))])


def jsonschema_problems(schema: dict[str, Any], args: dict[str, Any]) -> list[str]:
    """What jsonschema alone reports, worded as a call's problems are."""
    errors = sorted(compile_validator(schema).iter_errors(args), key=lambda e: list(map(str, e.path)))
    return [f"{'/'.join(str(p) for p in e.absolute_path) or '(arguments)'}: {e.message}" for e in errors]


def test_each_schema_but_the_fractional_multiple_has_a_fast_path() -> None:
    fast = {name for name, schema in SCHEMAS.items() if compile_fast(schema, validator_class(schema)) is not None}
    assert fast == set(SCHEMAS) - NO_FAST_PATH


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(args=ARGS)
def test_the_verdict_and_the_problems_are_jsonschemas(name: str, args: dict[str, Any]) -> None:
    schema = SCHEMAS[name]
    tools = toolset(schema)
    try:
        expected = jsonschema_problems(schema, args)
    except Exception:  # e.g. infinity against a float multipleOf: the tool becomes unusable, as before
        with pytest.raises(UnusableToolError):
            validation_problems(tools, "t", args)
        return
    assert validation_problems(tools, "t", args) == expected
    fast = tools.fast_validator("t")
    if fast is not None and fast.accepts(args):  # the property the fast path rests on
        assert compile_validator(schema).is_valid(args)


@pytest.mark.parametrize(
    ("schema", "args"),
    [
        ({"properties": {"a": {"pattern": "^\\s$"}}}, {"a": "\ufeff"}),  # ECMA's \s has the BOM
        ({"properties": {"a": {"pattern": "^\\D$"}}}, {"a": "٣"}),  # Rust's \d is ASCII only
        ({"properties": {"a": {"not": {"pattern": "^a$"}}}}, {"a": "a\n"}),  # Python's $ before a newline
        ({"properties": {"a": {"multipleOf": 0.1}}}, {"a": 0.3}),  # 0.3 / 0.1 is not whole in floats
        ({"properties": {"a": {"type": "array"}}}, {"a": (1, 2)}),  # a tuple is no array to jsonschema
        ({"properties": {"a": {"maximum": 2**70 - 1}}}, {"a": float(2**70)}),  # compared as floats
        ({"properties": {"a": {"maximum": float(2**64)}}}, {"a": 2**64 + 1}),
    ],
)
def test_what_rust_alone_would_wrongly_accept_goes_to_jsonschema(schema: dict[str, Any], args: dict[str, Any]) -> None:
    if not jsonschema_rs.validator_for(schema).is_valid(args):
        pytest.skip("this jsonschema-rs agrees with jsonschema here")
    tools = toolset(schema)
    problems = validation_problems(tools, "t", args)
    assert problems and problems == jsonschema_problems(schema, args)
    fast = tools.fast_validator("t")
    assert fast is None or not fast.accepts(args)


def test_search_like_arguments_take_the_fast_path() -> None:
    schema = {
        "type": "object",
        "properties": {"query": {"type": "string"}, "max_results": {"type": "integer", "minimum": 1, "maximum": 50}},
        "required": ["query"],
        "additionalProperties": False,
    }
    tools = toolset(schema)
    assert validation_problems(tools, "t", {"query": "create issue", "max_results": 5}) == []
    fast = tools.fast_validator("t")
    assert fast is not None and fast.accepts({"query": "create issue"})
    assert validation_problems(tools, "t", {"query": 3, "extra": 1}) == [
        "(arguments): Additional properties are not allowed ('extra' was unexpected)",
        "query: 3 is not of type 'string'",
    ]


def test_a_remote_ref_is_never_fetched(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []

    def refuse(uri: str) -> Any:
        asked.append(uri)
        raise ValueError("no")

    def no_network(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("something tried to connect")

    monkeypatch.setattr(fast_validation, "_refuse", refuse)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket.socket, "connect", no_network)
    remote = {"type": "object", "properties": {"a": {"$ref": "https://example.com/x.json"}}}
    assert compile_fast(remote, jsonschema.Draft202012Validator) is None
    assert asked and all(uri.startswith("https://example.com/x.json") for uri in asked)
    # through a tool set: what the load check reported before, nothing fetched
    with pytest.raises(UnusableToolError, match="remote schemas are never fetched"):
        validation_problems(toolset(remote), "t", {"a": 1})


def test_a_regex_only_python_reads_is_validated_by_jsonschema() -> None:
    schema = {"properties": {"a": {"type": "string", "pattern": "^(?P<w>x)(?P=w)\\Z"}}}
    with pytest.raises(jsonschema_rs.ValidationError):  # the Rust side cannot compile it
        jsonschema_rs.Draft202012Validator(schema)
    tools = toolset(schema)
    assert validation_problems(tools, "t", {"a": "xx"}) == []
    assert validation_problems(tools, "t", {"a": "xy"}) == ["a: 'xy' does not match '^(?P<w>x)(?P=w)\\\\Z'"]
    assert tools.fast_validator("t") is None


@pytest.mark.parametrize(
    ("pattern", "plain"),
    [
        ("^[a-z0-9_-]+$", True),
        ("^\\d{3}(?:-\\d{4})?$", True),
        ("^(ab|c)*?x.$", True),
        ("(?P<w>x)", False),
        ("x\\Z", False),
        ("(?i)x", False),
        ("(?=x)", False),
        ("(x)\\1", False),
        ("^a{,2}$", False),
        ("[[:alpha:]]", False),
        ("[a-z&&[^b]]", False),
        ("[]a]", False),
        ("a*+", False),
    ],
)
def test_only_regexes_both_sides_read_alike_are_plain(pattern: str, plain: bool) -> None:
    assert plain_regex(pattern) is plain


def test_dialects_without_a_rust_counterpart_have_no_fast_path() -> None:
    draft3 = {"$schema": "http://json-schema.org/draft-03/schema#", "properties": {"a": {"type": "string"}}}
    unknown = {"$schema": "https://example.com/my-dialect", "properties": {"a": {"type": "string"}}}
    for schema in (draft3, unknown):
        tools = toolset(schema)
        assert validation_problems(tools, "t", {"a": 1}) == jsonschema_problems(schema, {"a": 1})
        assert tools.fast_validator("t") is None


class _Raising:
    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def is_valid(self, instance: Any) -> bool:
        raise self.exc


def test_whatever_the_rust_side_raises_goes_to_jsonschema() -> None:
    panic = type("PanicException", (BaseException,), {})
    for exc in (RecursionError(), ValueError("x"), panic("boom")):
        fast = FastValidator(_Raising(exc), ascii_text=False, floats=True)  # type: ignore[arg-type]
        assert fast.accepts({"a": 1}) is False
    with pytest.raises(KeyboardInterrupt):
        FastValidator(_Raising(KeyboardInterrupt()), ascii_text=False, floats=True).accepts({})  # type: ignore[arg-type]


def test_arguments_it_cannot_represent_exactly_go_to_jsonschema() -> None:
    fast = compile_fast({"type": "object"}, jsonschema.Draft202012Validator)
    assert fast is not None and fast.accepts({"a": [1, 2.5, None, True, {"b": "é"}]})
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    for odd in (2**53, -(2**60), float("nan"), float("inf"), 1e300, (1,), {1: 2}, cyclic, b"x"):
        assert not fast.accepts({"a": odd})
