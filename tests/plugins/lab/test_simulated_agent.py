"""The simulated agent decides from what it was shown, as docs/eval.md describes: a tool
it sees that clearly fits is called directly, anything else is searched for, a found
tool is called directly or through the dispatcher, and it answers when every part of the
task had its call; it keeps nothing between requests."""

from __future__ import annotations

import json
from typing import Any

import anyio

from greenroom import Message, ModelRequest, ModelResponse, SystemSection, ToolCall, ToolDescriptor
from greenroom_deferred import DISPATCH_TOOL, LOAD_TOOL, SEARCH_TOOL
from greenroom_lab.eval.agent import ANSWER, NOTHING_LEFT, SimulatedAgent
from greenroom_lab.eval.reading import found_tools

CITY = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
WEATHER = ToolDescriptor("getWeatherForecast", "Get the weather forecast for a city", CITY)
HOTEL = ToolDescriptor("reserveHotelRoom", "Reserve a hotel room", {"type": "object", "properties": {}})
SEARCH = ToolDescriptor(SEARCH_TOOL, "Find tools", {"type": "object", "properties": {}})
DISPATCH = ToolDescriptor(DISPATCH_TOOL, "Call a found tool", {"type": "object", "properties": {}})
LOAD = ToolDescriptor(LOAD_TOOL, "Load a group", {"type": "object", "properties": {}})
PART = "Then reserve a hotel room there."
TASK = f"What is the weather forecast for Paris? {PART}"


def ask(tools: list[ToolDescriptor], *messages: Message, step: int = 1, task: str = TASK) -> ModelResponse:
    request = ModelRequest(system=(), tools=tuple(tools), messages=(Message("user", task), *messages), step=step)
    return anyio.run(SimulatedAgent().complete, request)


def calls(response: ModelResponse) -> list[tuple[str, dict[str, Any]]]:
    return [(c.name, dict(c.arguments or {})) for c in response.message.tool_calls]


def search_answer(call_id: str, *tools: ToolDescriptor) -> Message:
    lines = [json.dumps({"name": t.name, "description": t.description, "parameters": t.parameters}) for t in tools]
    return Message("tool", "\n".join(f"<function>{line}</function>" for line in lines), tool_call_id=call_id)


def test_with_every_tool_eager_it_calls_the_tools_that_fit_each_part() -> None:
    response = ask([WEATHER, HOTEL])
    assert calls(response) == [("getWeatherForecast", {"city": "example"}), ("reserveHotelRoom", {})]
    assert response.stop_reason == "tool_calls" and response.usage.output_tokens > 0


def test_with_a_search_tool_it_searches_each_part_it_sees_no_clear_tool_for() -> None:
    response = ask([SEARCH, DISPATCH, LOAD, WEATHER])
    assert calls(response) == [
        ("getWeatherForecast", {"city": "example"}),  # seen, and clearly fits: called at once
        (SEARCH_TOOL, {"query": PART}),
    ]


def test_a_found_tool_not_in_the_tools_array_is_called_through_the_dispatcher() -> None:
    searched = Message("assistant", "", tool_calls=(ToolCall("s1_0", SEARCH_TOOL, {"query": PART}),))
    weather = Message("assistant", "", tool_calls=(ToolCall("c1_0", "getWeatherForecast", {"city": "x"}),))
    answer = search_answer("s1_0", ToolDescriptor("bookTaxi", "Book a taxi", None), HOTEL)
    response = ask([SEARCH, DISPATCH, WEATHER], weather, searched, answer, step=2)
    assert calls(response) == [
        (DISPATCH_TOOL, {"tool_name": "reserveHotelRoom", "arguments": {}})
    ]  # best fit, not first


def test_it_answers_once_every_part_had_its_call() -> None:
    weather = Message("assistant", "", tool_calls=(ToolCall("c1_0", "getWeatherForecast", {"city": "x"}),))
    searched = Message(
        "assistant",
        "",
        tool_calls=(
            ToolCall(
                "s1_0",
                SEARCH_TOOL,
                {"query": PART},
            ),
        ),
    )
    hotel = ToolCall("c2_0", DISPATCH_TOOL, {"tool_name": "reserveHotelRoom", "arguments": {}})
    history = [weather, searched, search_answer("s1_0", HOTEL), Message("assistant", "", tool_calls=(hotel,))]
    response = ask([SEARCH, DISPATCH, WEATHER], *history, step=3)
    assert calls(response) == [] and response.message.content == ANSWER and response.stop_reason == "stop"


def test_a_search_that_found_nothing_that_fits_ends_with_what_it_could_do() -> None:
    searched = Message("assistant", "", tool_calls=(ToolCall("s1_0", SEARCH_TOOL, {"query": PART}),))
    failed = Message("tool", "search failed", tool_call_id="s1_0", is_error=True)
    response = ask([SEARCH, DISPATCH], searched, failed, step=2, task=PART)
    assert calls(response) == [] and response.message.content == NOTHING_LEFT  # no retry, no made-up call


def test_it_never_calls_the_deferring_plugins_own_tools_as_task_tools() -> None:
    lone = ToolDescriptor(SEARCH_TOOL, "Get the weather forecast for a city", CITY)  # a search tool that reads like one
    response = ask([lone, DISPATCH, LOAD])
    assert all(name == SEARCH_TOOL and "query" in args for name, args in calls(response))


def test_found_tools_reads_the_functions_of_a_search_answer_and_skips_what_is_not_one() -> None:
    text = (
        '<function>{"name": "a", "description": "A", "parameters": {"type": "object"}}</function>\n'
        "<function>not json</function>\n"
        '<function>{"description": "no name"}</function>\n'
        '<function>{"name": "b"}</function>'
    )
    assert [(k.name, k.description) for k in found_tools(text)] == [("a", "A"), ("b", "")]
    assert found_tools("No tools matched.") == []


def ask_with(system: str, tools: list[ToolDescriptor], *messages: Message, step: int = 1) -> ModelResponse:
    request = ModelRequest(
        system=(SystemSection("deferred-tools", system),), tools=tuple(tools), messages=messages, step=step
    )
    return anyio.run(SimulatedAgent().complete, request)


LISTING = (
    "Deferred tools (schemas not loaded). Get a tool's schema with ToolSearch.\n\n"
    "<available-deferred-tools>\n"
    "getWeatherForecast - Get the weather forecast for a city\n"
    "ResearchHelper - Find academic papers and journal articles\n"
    "</available-deferred-tools>"
)


def test_a_tool_the_system_prompt_lists_is_asked_for_by_name() -> None:
    task = Message("user", "What is the weather forecast for Paris? Find academic papers in journals about it.")
    response = ask_with(LISTING, [SEARCH, DISPATCH], task)
    # by its name for the first part, by its description for the second: one search for both
    assert calls(response) == [(SEARCH_TOOL, {"query": "select:getWeatherForecast,ResearchHelper"})]


def test_names_the_listing_gives_without_descriptions_are_read_too() -> None:
    for listing in (
        "Other deferred tools, by domain:\n- travel (40 tools)\n  bookTaxi, reserveHotelRoom, ... (+38 more)",
        "<available-deferred-tools>\ntravel: bookTaxi reserveHotelRoom\n</available-deferred-tools>",
    ):
        response = ask_with(listing, [SEARCH, DISPATCH], Message("user", PART))
        assert calls(response) == [(SEARCH_TOOL, {"query": "select:reserveHotelRoom"})], listing
    prose = "You are a helpful assistant, and you reserve rooms, book hotels\nUse tools when they help"
    response = ask_with(prose, [SEARCH, DISPATCH], Message("user", PART))
    assert calls(response) == [(SEARCH_TOOL, {"query": PART})]  # prose names no tool


def test_a_selected_tool_is_called_once_its_schema_came_and_a_name_not_found_is_searched_for() -> None:
    asked = Message("user", PART)
    select = Message("assistant", "", tool_calls=(ToolCall("s1_0", SEARCH_TOOL, {"query": "select:reserveHotelRoom"}),))
    listing = "<available-deferred-tools>\nreserveHotelRoom - Reserve a hotel room\n</available-deferred-tools>"
    found = ask_with(listing, [SEARCH, DISPATCH], asked, select, search_answer("s1_0", HOTEL), step=2)
    assert calls(found) == [(DISPATCH_TOOL, {"tool_name": "reserveHotelRoom", "arguments": {}})]
    missing = Message("tool", "No tools matched select reserveHotelRoom.", tool_call_id="s1_0")
    again = ask_with(listing, [SEARCH, DISPATCH], asked, select, missing, step=2)
    assert calls(again) == [(SEARCH_TOOL, {"query": PART})]  # no second select of the same name


def test_it_works_on_the_latest_request_and_remembers_the_schemas_the_session_found() -> None:
    first = Message("user", "What is the weather forecast for Paris?")
    searched = Message("assistant", "", tool_calls=(ToolCall("s1_0", SEARCH_TOOL, {"query": first.content}),))
    weather = Message("assistant", "", tool_calls=(ToolCall("c2_0", DISPATCH_TOOL, {"tool_name": WEATHER.name}),))
    history = [first, searched, search_answer("s1_0", WEATHER), weather, Message("assistant", ANSWER)]
    # the same tool again, in other words: its schema is in the conversation, no search
    response = ask([SEARCH, DISPATCH], *history[1:], Message("user", "And the weather forecast for Rome?"), step=4)
    assert calls(response) == [(DISPATCH_TOOL, {"tool_name": WEATHER.name, "arguments": {"city": "example"}})]


def test_a_tool_is_recognised_by_its_description_as_well_as_its_name() -> None:
    papers = ToolDescriptor("ResearchHelper", "Find academic papers and journal articles", None)
    response = ask([SEARCH, DISPATCH, papers], task="Find academic papers in journals about bees.")
    assert calls(response) == [("ResearchHelper", {})]  # seen, and clearly fits by its description
