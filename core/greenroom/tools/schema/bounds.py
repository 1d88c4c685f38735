"""A config field's bounds, declared once: the attrs validators a field carries say them,
and ``constrain`` writes them into the field's JSON Schema (``schema_for_attrs`` calls it
for every field, so every plugin's ``config_schema()`` has them with no second copy).

- ``ge``, ``gt``, ``le``, ``lt``: ``minimum``, ``exclusiveMinimum``, ``maximum``,
  ``exclusiveMaximum`` (the tightest when there are several);
- ``in_``: ``enum``;
- ``min_len``, ``max_len``: ``minItems``/``maxItems`` on an array, ``minLength``/
  ``maxLength`` on a string, ``minProperties``/``maxProperties`` on a table;
- ``and_`` (a field's list of validators): each part; ``optional``: its validator, with
  ``null`` still allowed;
- ``deep_iterable``: its member validator on ``items``, its iterable validator on the
  array; ``deep_mapping``: its value validator on ``additionalProperties``, its key
  validator on ``propertyNames``, its mapping validator on the table.

Other validators (a plugin's own functions) say nothing here: a plugin writes what they
check into its schema itself (overriding ``config_schema``).
"""

from __future__ import annotations

from typing import Any

import attrs

_NUMBER = {">=": "minimum", ">": "exclusiveMinimum", "<=": "maximum", "<": "exclusiveMaximum"}
_LENGTH = {
    "array": ("minItems", "maxItems"),
    "string": ("minLength", "maxLength"),
    "object": ("minProperties", "maxProperties"),
}


def constrain(prop: dict[str, Any], validator: Any) -> None:
    """Add to the property schema ``prop`` the constraints ``validator`` stands for."""
    parts = _fields(validator)
    if "_validators" in parts:  # and_, or a field's list of validators
        for part in validator._validators:
            constrain(prop, part)
    elif {"bound", "compare_op"} <= parts and validator.compare_op in _NUMBER:
        _tighten(prop, _NUMBER[validator.compare_op], validator.bound)
    elif "options" in parts:  # in_
        options = validator.options
        prop["enum"] = list(options) if isinstance(options, tuple | list) else sorted(options, key=repr)
    elif parts == {"min_length"} or parts == {"max_length"}:
        keyword = _length_keyword(prop, 0 if parts == {"min_length"} else 1)
        if keyword is not None:
            _tighten(prop, keyword, validator.min_length if parts == {"min_length"} else validator.max_length)
    elif parts == {"validator"}:  # optional
        had = "enum" in prop
        constrain(prop, validator.validator)
        if "enum" in prop and not had and None not in prop["enum"]:
            prop["enum"].append(None)
    elif {"member_validator", "iterable_validator"} <= parts:  # deep_iterable
        if validator.iterable_validator is not None:
            constrain(prop, validator.iterable_validator)
        if isinstance(prop.get("items"), dict):
            constrain(prop["items"], validator.member_validator)
    elif {"key_validator", "value_validator", "mapping_validator"} <= parts:  # deep_mapping
        if validator.mapping_validator is not None:
            constrain(prop, validator.mapping_validator)
        names: dict[str, Any] = {}
        if validator.key_validator is not None:
            constrain(names, validator.key_validator)
        if names:  # only what the key validator says (a table's keys are strings anyway)
            prop.setdefault("propertyNames", {}).update(names)
        if validator.value_validator is not None:
            values = prop.get("additionalProperties")
            if not isinstance(values, dict):
                values = prop["additionalProperties"] = {}
            constrain(values, validator.value_validator)


def _fields(validator: Any) -> set[str]:
    """The attrs fields of one of attrs' own validators (none for a plain function)."""
    cls = type(validator)
    if not attrs.has(cls) or not cls.__module__.startswith("attr"):
        return set()
    return {a.name for a in attrs.fields(cls)}


def _tighten(prop: dict[str, Any], keyword: str, bound: Any) -> None:
    if keyword not in prop:
        prop[keyword] = bound
    elif keyword.startswith(("min", "exclusiveMin")):
        prop[keyword] = max(prop[keyword], bound)
    else:
        prop[keyword] = min(prop[keyword], bound)


def _length_keyword(prop: dict[str, Any], which: int) -> str | None:
    kinds = prop.get("type")
    for kind in [kinds] if isinstance(kinds, str) else kinds or ():
        if kind in _LENGTH:
            return _LENGTH[kind][which]
    return None
