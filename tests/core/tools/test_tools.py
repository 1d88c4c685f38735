"""The @tool decorator: schemas from signatures and docstrings, execution, validation."""

from __future__ import annotations

import enum
import threading
from typing import Literal, Optional

import attrs
import jsonschema
import pytest
from support.gr_testutil import DATASETS

from greenroom.tools import ToolCallContext, ToolResult, tool
from greenroom.tools.catalog import CatalogError, load_catalog


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


@attrs.frozen
class Address:
    """A postal address.

    Args:
        city: City name.
        zip: Postal code.
    """

    city: str
    zip: str = "00000"


def ctx() -> ToolCallContext:
    return ToolCallContext(call_id="c1", run_id="r1", tool_name="t")


def test_schema_from_hints_and_google_docstring() -> None:
    @tool
    def book(
        city: str,
        nights: int,
        budget: float = 100.0,
        smoking: bool = False,
        tags: list[str] | None = None,
        extras: dict[str, int] | None = None,
        color: Color = Color.RED,
        kind: Literal["hotel", "hostel"] = "hotel",
        note: Optional[str] = None,  # noqa: UP045 - the old spelling must work too
        address: Address | None = None,
    ) -> str:
        """Book a room.

        Args:
            city: Where to stay.
            nights: How many nights,
                at least one.
            budget: Per night.
        """
        return "ok"

    p = book.descriptor.parameters
    assert book.descriptor.description == "Book a room."
    assert p["required"] == ["city", "nights"]
    assert p["additionalProperties"] is False
    props = p["properties"]
    assert props["city"] == {"type": "string", "description": "Where to stay."}
    assert props["nights"]["description"] == "How many nights, at least one."
    assert props["budget"] == {"type": "number", "description": "Per night.", "default": 100.0}
    assert props["smoking"]["type"] == "boolean"
    assert props["tags"]["type"] == ["array", "null"] and props["tags"]["items"] == {"type": "string"}
    assert props["extras"]["additionalProperties"] == {"type": "integer"}
    assert props["color"] == {"enum": ["red", "blue"], "default": "red"}
    assert props["kind"]["enum"] == ["hotel", "hostel"]
    assert props["note"]["type"] == ["string", "null"]
    addr = props["address"]
    assert addr["type"] == ["object", "null"]
    assert addr["required"] == ["city"] and addr["properties"]["city"]["description"] == "City name."
    jsonschema.Draft202012Validator.check_schema(p)


def test_sphinx_docstring_and_overrides() -> None:
    @tool(name="lookup", description="Find a thing.", timeout=3)
    def f(q: str) -> str:
        """Ignored summary.

        :param q: the query text
        """
        return q

    assert f.descriptor.name == "lookup"
    assert f.descriptor.description == "Find a thing."
    assert f.descriptor.parameters["properties"]["q"]["description"] == "the query text"
    assert f.timeout == 3


def test_tool_without_description_is_rejected() -> None:
    with pytest.raises(ValueError, match="needs a description"):

        @tool
        def nodoc(x: int) -> int:
            return x


@pytest.mark.anyio
async def test_sync_tools_run_in_a_worker_thread_and_async_tools_are_awaited() -> None:
    main = threading.get_ident()

    @tool
    def where() -> int:
        """Report the thread."""
        return threading.get_ident()

    @tool
    async def double(x: int) -> int:
        """Double x."""
        return 2 * x

    assert await where.execute({}, ctx()) != main
    assert await double.execute({"x": 4}, ctx()) == 8


@pytest.mark.anyio
async def test_enum_and_attrs_arguments_arrive_as_python_objects() -> None:
    seen = {}

    @tool
    def ship(color: Color, to: Address, ctx: ToolCallContext) -> str:
        """Ship something."""
        seen.update(color=color, to=to, call=ctx.call_id)
        return "shipped"

    assert "ctx" not in ship.descriptor.parameters["properties"]
    await ship.execute({"color": "blue", "to": {"city": "Oslo"}}, ctx())
    assert seen == {"color": Color.BLUE, "to": Address("Oslo"), "call": "c1"}


def test_results_from_values() -> None:
    assert ToolResult.from_value("hi").content == "hi"
    r = ToolResult.from_value({"b": 1, "a": [1, 2]})
    assert r.content == '{"a": [1, 2], "b": 1}' and r.structured == {"b": 1, "a": [1, 2]}
    assert ToolResult.from_value(Address("Rome")).structured == {"city": "Rome", "zip": "00000"}


@pytest.mark.anyio
async def test_catalog_tools_load_and_refuse_to_execute(tmp_path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text(
        '{"name": "a", "description": "A", "parameters": null, "group": "g"}\n\n'
        '{"name": "b", "description": "B", "parameters": {"type": "object"}, "group": null}\n'
    )
    tools = load_catalog(f)
    assert [t.descriptor.name for t in tools] == ["a", "b"]
    assert tools[0].descriptor.group == "g"
    assert tools[0].descriptor.parameters == {"type": "object", "properties": {}}
    result = await tools[0].execute({}, ctx())
    assert result.is_error and "no implementation" in result.content


def test_catalog_errors_name_file_and_line(tmp_path) -> None:
    f = tmp_path / "c.jsonl"
    f.write_text('{"name": "a", "description": "A"}\n{"name": 3}\n')
    with pytest.raises(CatalogError, match=r"c.jsonl:2: 'name' must be a non-empty string"):
        load_catalog(f)
    f.write_text('{"name": "a", "colour": 1}\n')
    with pytest.raises(CatalogError, match=r"unknown key.*colour"):
        load_catalog(f)


@pytest.mark.skipif(not (DATASETS / "github_mcp").exists(), reason="../shared/datasets not present")
def test_real_catalog_schemas_are_valid() -> None:
    tools = load_catalog(DATASETS / "github_mcp" / "tools.jsonl")
    assert len(tools) == 117
    for t in tools:
        jsonschema.Draft202012Validator.check_schema(dict(t.descriptor.parameters))
