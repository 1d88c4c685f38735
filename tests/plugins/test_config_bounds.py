"""Config bounds are declared once, as attrs validators, in every plugin with a config:
each bounded field's JSON Schema (``PluginClass.config_schema()``) carries the same
bound, and the schema accepts exactly the values constructing the class accepts.

The validators are read here on their own (not through core's
``greenroom.tools.schema.bounds``, which ``schema_for_attrs`` applies for every plugin), so
a bound it missed or wrote wrong shows."""

from __future__ import annotations

import math
import typing
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from greenroom_deferred import DeferredToolsPlugin
from greenroom_gateway import GatewayPlugin
from greenroom_priors import PriorsPlugin
from greenroom_ranking import SearchRankingPlugin
from greenroom_results import ReadResultPlugin

PLUGINS = (DeferredToolsPlugin, SearchRankingPlugin, PriorsPlugin, GatewayPlugin, ReadResultPlugin)
PLUGIN_DIR = Path(__file__).resolve().parents[2] / "plugins"
KEYWORD = {">=": "minimum", ">": "exclusiveMinimum", "<=": "maximum", "<": "exclusiveMaximum"}


@attrs.frozen
class Bounded:
    """One config field with a numeric bound: where it sits and what bounds it."""

    plugin: type
    path: tuple[str, ...]  # the field's keys from the top of the section
    classes: tuple[type, ...]  # the attrs class at each key
    bounds: tuple[tuple[str, Any], ...]  # (comparison, bound)

    def __str__(self) -> str:
        return f"{self.plugin.name}.{'.'.join(self.path)}"

    def prop(self) -> dict[str, Any]:
        schema = self.plugin.config_schema()
        for key in self.path:
            schema = schema["properties"][key]
        return schema

    def construct(self, value: Any) -> Any:
        """The config with only this field given ``value`` (validators run)."""
        inner: Any = value
        for cls, key in reversed(list(zip(self.classes, self.path, strict=True))):
            inner = cls(**{key: inner})
        return inner

    def instance(self, value: Any) -> dict[str, Any]:
        out: Any = value
        for key in reversed(self.path):
            out = {key: out}
        return out


def number_bounds(validator: Any) -> Iterator[tuple[str, Any]]:
    """The (comparison, bound) of every ge/gt/le/lt in a validator (lists, and_, optional)."""
    if validator is None:
        return
    if isinstance(validator, list | tuple):
        for v in validator:
            yield from number_bounds(v)
        return
    for name in ("_validators", "validator"):
        inner = getattr(validator, name, None)
        if inner is not None:
            yield from number_bounds(inner)
            return
    if getattr(validator, "compare_op", None) in KEYWORD:
        yield validator.compare_op, validator.bound


def bounded_fields() -> list[Bounded]:
    found: list[Bounded] = []

    def walk(plugin: type, cls: type, path: tuple[str, ...], classes: tuple[type, ...]) -> None:
        hints = typing.get_type_hints(cls)
        for field in attrs.fields(cls):
            here, owners = (*path, field.name), (*classes, cls)
            bounds = tuple(number_bounds(field.validator))
            if bounds:
                found.append(Bounded(plugin, here, owners, bounds))
            hint = hints[field.name]
            if isinstance(hint, type) and attrs.has(hint):
                walk(plugin, hint, here, owners)

    for plugin in PLUGINS:
        walk(plugin, plugin.config_class, (), ())
    return found


BOUNDED = bounded_fields()


def test_every_plugin_has_bounded_fields() -> None:
    assert {b.plugin for b in BOUNDED} == set(PLUGINS)
    assert {str(b) for b in BOUNDED} >= {
        "deferred-tools.max_results",
        "deferred-tools.retention.omega",
        "search-ranking.max_results",
        "search-ranking.bm25_b",
        "priors-persistence.min_smoothing",
    }


@pytest.mark.parametrize("field", BOUNDED, ids=str)
def test_the_schema_states_the_validators_bound(field: Bounded) -> None:
    prop = field.prop()
    for op, bound in field.bounds:
        assert prop.get(KEYWORD[op]) == bound, f"{field}: {KEYWORD[op]} {prop.get(KEYWORD[op])} != {bound}"


def _edges(field: Bounded, integer: bool) -> list[Any]:
    out: list[Any] = []
    for _, bound in field.bounds:
        out += [bound - 1, bound, bound + 1]
        if not integer:
            out += [bound - 0.5, bound + 0.5, math.nextafter(bound, -math.inf), math.nextafter(bound, math.inf)]
    return [int(v) for v in out] if integer else out


def _accepted_by_class(field: Bounded, value: Any) -> bool:
    try:
        field.construct(value)
    except (ValueError, TypeError):
        return False
    return True


def _accepted_by_schema(field: Bounded, value: Any) -> bool:
    schema = field.plugin.config_schema()
    return bool(jsonschema.validators.validator_for(schema)(schema).is_valid(field.instance(value)))


@pytest.mark.parametrize("field", BOUNDED, ids=str)
@settings(max_examples=80, deadline=None)
@given(data=st.data())
def test_the_schema_rejects_what_the_validator_rejects(field: Bounded, data: st.DataObject) -> None:
    kinds = field.prop().get("type")
    integer = "integer" in ([kinds] if isinstance(kinds, str) else kinds)
    numbers = st.integers(-(10**6), 10**6) if integer else st.floats(-1e6, 1e6, allow_nan=False) | st.integers(-9, 9)
    value = data.draw(st.sampled_from(_edges(field, integer)) | numbers)
    assert _accepted_by_class(field, value) == _accepted_by_schema(field, value), f"{field} = {value!r}"


def _both(plugin: type, **section: Any) -> tuple[bool, bool]:
    """Whether the config class and the schema accept ``section``."""
    try:
        plugin.config_class(**section)
        by_class = True
    except (ValueError, TypeError):
        by_class = False
    schema = plugin.config_schema()
    return by_class, bool(jsonschema.validators.validator_for(schema)(schema).is_valid(section))


@pytest.mark.parametrize(
    ("plugin", "section", "accepted"),
    [
        (SearchRankingPlugin, {"rankers": []}, False),  # min_len
        (SearchRankingPlugin, {"rankers": ["nope"]}, False),  # in_, on each item
        (SearchRankingPlugin, {"rankers": ["keyword", "bm25-plain"]}, True),
        (SearchRankingPlugin, {"weights": {"mine": -0.5}}, False),  # deep_mapping's values
        (SearchRankingPlugin, {"weights": {"mine": 0.0}}, True),
        (SearchRankingPlugin, {"max_results": None}, True),  # optional
        (SearchRankingPlugin, {"fusion": "max"}, False),  # in_
        (PriorsPlugin, {"on_store_error": "ignore"}, False),
    ],
)
def test_the_other_validators_and_the_schema_agree(plugin: type, section: dict[str, Any], accepted: bool) -> None:
    assert _both(plugin, **section) == (accepted, accepted)
