"""Anthropic's programmatic tool calling through greenroom: the request offers the code
execution tool and ``allowed_callers`` on exactly the tools of ``ModelRequest.programmatic``;
the calls the model's code makes in Anthropic's container are answered by the run like
any call; each turn goes back verbatim (callers included) and the next request names the
container the code waits in; streamed or not. Which models have it, and the setting's
errors."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from typing import Any

import pytest
from support.fake_llm_server import SSE, FakeLLMServer, Reply, anthropic_message, strip_cache_control

from greenroom import Plugin, RequestDraft, RunContext, hookimpl, tool
from greenroom import events as ev
from greenroom.config import AgentConfig, ConfigError
from greenroom.models import Message, ModelRequest, SystemSection, supports_programmatic_calls
from greenroom.plugins.discovery import make_plugin_host
from greenroom.run.runtime import Runtime
from greenroom.tools import ToolDescriptor

pytestmark = pytest.mark.anyio

CODE = "code_execution_20260120"
CALLER = {"type": CODE, "tool_id": "srvtoolu_1"}
CONTAINER = {"id": "container_1", "expires_at": "2026-12-05T12:00:00Z"}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class FromCode(Plugin):
    """Lets the model's code call every tool sent, as code mode does with a model that can."""

    name = "from-code"

    @hookimpl
    def greenroom_before_inference(self, ctx: RunContext, request: RequestDraft) -> None:
        if ctx.hosted_programmatic_calls:
            request.programmatic = {d.name for d in request.tools}


def code_turn(*calls: tuple[str, dict[str, int]], code: bool = True) -> list[dict[str, Any]]:
    """A turn in which the model's code (started in it, or running on) calls ``add``."""
    blocks: list[dict[str, Any]] = []
    if code:
        source = "a = await add(a=2, b=3)\nb = await add(a=a, b=5)\nprint(b)"
        blocks += [
            {"type": "text", "text": "I'll add in code.", "citations": None},
            {"type": "server_tool_use", "id": "srvtoolu_1", "name": "code_execution", "input": {"code": source}},
        ]
    blocks += [{"type": "tool_use", "id": i, "name": "add", "input": args, "caller": CALLER} for i, args in calls]
    return blocks


FINISHED = [
    {
        "type": "code_execution_tool_result",
        "tool_use_id": "srvtoolu_1",
        "content": {"type": "code_execution_result", "stdout": "10\n", "stderr": "", "return_code": 0, "content": []},
    },
    {"type": "text", "text": "The total is 10.", "citations": None},
]


def with_container(message: dict[str, Any]) -> dict[str, Any]:
    return {**message, "container": CONTAINER}


async def test_the_request_offers_the_code_tool_and_callers_to_exactly_the_programmatic_tools(make_anthropic) -> None:
    request = ModelRequest(
        system=(SystemSection("agent", "Be terse."),),
        tools=(add.descriptor, ToolDescriptor("now", "The time.")),
        messages=(Message("user", "add"),),
        programmatic=frozenset({"add"}),
    )
    model = make_anthropic(programmatic=True)
    assert supports_programmatic_calls(model)
    tools = strip_cache_control(model.build_body(request)["tools"])
    assert tools[0]["name"] == "add" and tools[0]["allowed_callers"] == ["direct", CODE]
    assert tools[1]["name"] == "now" and "allowed_callers" not in tools[1]
    assert tools[2] == {"type": CODE, "name": "code_execution"}
    assert model.build_body(request)["tools"][2]["cache_control"] == {"type": "ephemeral"}  # the prefix's end
    assert "container" not in model.build_body(request)
    off = make_anthropic(programmatic=False)
    assert not supports_programmatic_calls(off)
    assert all("allowed_callers" not in t and t.get("type") != CODE for t in off.build_body(request)["tools"])


@pytest.mark.parametrize(
    ("name", "has_it"),
    [
        ("claude-sonnet-4-5", True),
        ("claude-sonnet-4-5-20250929", True),
        ("claude-opus-4-6", True),
        ("claude-opus-5", True),
        ("claude-sonnet-4-20250514", False),
        ("claude-opus-4-1", False),
        ("claude-3-7-sonnet-latest", False),
        ("claude-haiku-4-5", False),
    ],
)
def test_auto_goes_by_the_model(name: str, has_it: bool) -> None:
    from greenroom_anthropic import make_anthropic_model

    assert supports_programmatic_calls(make_anthropic_model(name, {})) is has_it


def test_a_bad_setting_names_its_key() -> None:
    from greenroom_anthropic import make_anthropic_model

    with pytest.raises(ConfigError) as caught:
        make_anthropic_model("claude-opus-4-6", {"programmatic": "yes"})
    assert caught.value.path == "model.programmatic"


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_the_run_answers_the_calls_of_the_models_code(
    server: FakeLLMServer, make_anthropic: Callable[..., Any], streamed: bool
) -> None:
    first = with_container(anthropic_message(code_turn(("toolu_1", {"a": 2, "b": 3}))))
    second = with_container(anthropic_message(code_turn(("toolu_2", {"a": 5, "b": 5}), code=False)))
    last = with_container(anthropic_message(FINISHED))
    if streamed:
        server.push(*(Reply(stream=stream_of(m)) for m in (first, second, last)))
    else:
        server.push(Reply(body=first), Reply(body=second), Reply(body=last))
    model = make_anthropic(programmatic=True)
    rt = Runtime(
        model=model, tools=[add], host=make_plugin_host(records=[], extra=[FromCode()]), agent=AgentConfig(max_steps=5)
    )
    results: list[ev.ToolExecuted] = []
    rt.events.subscribe(lambda e: results.append(e) if isinstance(e, ev.ToolExecuted) else None)
    heard: list[str] = []
    outcome = await rt.session().run(
        "add 2 and 3, then 5", on_text=(lambda d: heard.append(d.text)) if streamed else None
    )
    assert outcome.stop_reason == "final" and outcome.text == "The total is 10."
    assert bool(heard) is streamed and all(r.body.get("stream", False) is streamed for r in server.requests)
    assert [(e.tool, e.content) for e in results] == [("add", "5"), ("add", "10")]  # ordinary calls of the run

    bodies = [strip_cache_control(r.body) for r in server.requests]
    assert "container" not in bodies[0]
    assert bodies[1]["container"] == bodies[2]["container"] == "container_1"  # the code waits there
    assert bodies[1]["messages"][1] == {"role": "assistant", "content": first["content"]}  # verbatim, callers too
    assert bodies[1]["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5", "is_error": False}
    ]
    assert bodies[2]["messages"][3] == {"role": "assistant", "content": second["content"]}
    await model.aclose()


def stream_of(message: dict[str, Any]) -> list[SSE]:
    """The events of a streamed message, as the API streams them: text and a tool's input
    in one delta each, other blocks whole at their start, the container in ``message_delta``."""

    def event(kind: str, **data: Any) -> SSE:
        return SSE({"type": kind, **data}, event=kind)

    start = {**copy.deepcopy(message), "content": [], "stop_reason": None}
    start.pop("container")
    out = [event("message_start", message=start)]
    for i, block in enumerate(message["content"]):
        if block["type"] in ("tool_use", "server_tool_use"):
            opened = {**block, "input": {}}
            piece = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
            out += [
                event("content_block_start", index=i, content_block=opened),
                event("content_block_delta", index=i, delta=piece),
            ]
        elif block["type"] == "text":
            text = {"type": "text_delta", "text": block["text"]}
            out += [
                event("content_block_start", index=i, content_block={**block, "text": ""}),
                event("content_block_delta", index=i, delta=text),
            ]
        else:
            out.append(event("content_block_start", index=i, content_block=block))
        out.append(event("content_block_stop", index=i))
    delta = {"stop_reason": message["stop_reason"], "stop_sequence": None, "container": message["container"]}
    out += [event("message_delta", delta=delta, usage={"output_tokens": 10}), event("message_stop")]
    return out
