"""Tool-call arguments nested past the bound stay text: measuring depth, writing and
parsing JSON of any depth without recursion, and a provider's argument parsing."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from greenroom._support.arguments import (
    MAX_ARGUMENT_DEPTH,
    bounded_response,
    json_text,
    nested_too_deeply,
    nesting_exceeds,
    parse_json_object,
    text_nesting_exceeds,
    within_bounds,
)
from greenroom.models import Message, ModelResponse, ToolCall
from greenroom.providers._messages import parse_arguments


def nested(levels: int) -> dict[str, Any]:
    """An object ``levels`` deep: ``{"a": {"a": ... {}}}``."""
    value: dict[str, Any] = {}
    for _ in range(levels - 1):
        value = {"a": value}
    return value


def nested_text(levels: int) -> str:
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def test_depth_is_counted_in_objects_and_arrays_up_to_the_bound() -> None:
    assert not nesting_exceeds(nested(MAX_ARGUMENT_DEPTH))
    assert nesting_exceeds(nested(MAX_ARGUMENT_DEPTH + 1))
    assert not nesting_exceeds("{{{{ text is not nesting }}}}")
    assert nesting_exceeds([[[[]]]], limit=3) and not nesting_exceeds([[[]]], limit=3)
    assert not text_nesting_exceeds(nested_text(MAX_ARGUMENT_DEPTH))
    assert text_nesting_exceeds(nested_text(MAX_ARGUMENT_DEPTH + 1))
    assert text_nesting_exceeds(nested_text(100_000))


def test_brackets_inside_strings_do_not_count() -> None:
    text = json.dumps({"code": "[" * 500 + '\\"{' * 100, "n": [1, [2]]})
    assert not text_nesting_exceeds(text, limit=3)
    assert parse_json_object(text) == json.loads(text)


def test_a_cyclic_value_is_too_deep_rather_than_an_endless_walk() -> None:
    loop: dict[str, Any] = {}
    loop["self"] = loop
    assert nesting_exceeds(loop)


def test_json_text_writes_any_depth_without_recursion() -> None:
    deep = nested(50_000)
    assert json_text(deep) == nested_text(50_000)
    assert json_text({"k": [1, "two", None, True, 2.5, {"x": ()}]}) == '{"k":[1,"two",null,true,2.5,{"x":[]}]}'


_json = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=30,
)


@given(_json)
def test_json_text_reads_back_as_the_same_value(value: Any) -> None:
    assert json.loads(json_text(value)) == value


@given(st.text(max_size=200))
def test_parsing_any_text_answers_an_object_or_none(text: str) -> None:
    parsed = parse_json_object(text)
    assert parsed is None or isinstance(parsed, dict)


def test_parse_arguments_keeps_arguments_nested_too_deeply_as_text() -> None:
    text = nested_text(1_000)  # json.loads of this raises RecursionError
    assert parse_arguments(text) == (None, text)
    # an object from a compatible server that sent one, not a string
    args, raw = parse_arguments(nested(1_000))
    assert args is None and raw == text
    # within the bound nothing changes
    assert parse_arguments('{"a": {"b": 1}}') == ({"a": {"b": 1}}, '{"a": {"b": 1}}')
    assert parse_arguments("") == ({}, "")


def test_a_call_over_the_bound_keeps_only_its_text() -> None:
    ok = ToolCall("c1", "t", {"a": 1})
    deep = ToolCall("c2", "t", nested(1_000))
    assert within_bounds(ok) is ok
    bounded = within_bounds(deep)
    assert (bounded.id, bounded.name, bounded.arguments) == ("c2", "t", None)
    assert bounded.raw_arguments == nested_text(1_000)
    assert nested_too_deeply(deep) and nested_too_deeply(bounded) and not nested_too_deeply(ok)

    response = ModelResponse(Message("assistant", "", tool_calls=(ok, deep)))
    out = bounded_response(response)
    assert out.tool_calls[0] is ok and out.tool_calls[1] == bounded
    plain = ModelResponse(Message("assistant", "", tool_calls=(ok,)))
    assert bounded_response(plain) is plain


def test_json_text_writes_a_container_inside_itself_once() -> None:
    loop: list[Any] = [1]
    loop.append(loop)
    shared = [1]
    assert json_text({"l": loop, "s": [shared, shared]}) == '{"l":[1,"<cycle>"],"s":[[1],[1]]}'
