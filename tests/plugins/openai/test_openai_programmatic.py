"""OpenAI's programmatic tool calling through greenroom (Responses API): the request offers
``programmatic_tool_calling`` and ``allowed_callers`` on exactly the tools of
``ModelRequest.programmatic``; the calls the model's program makes are answered by the run
like any call; the program's items go back whole (id and fingerprint), its calls with
their caller, and each result names the same caller; streamed or not. The setting is
opt-in and for the Responses API only."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.fake_llm_server import FakeLLMServer, Reply, responses_object
from support.openai_wire import message_item, responses_stream

from greenroom import Plugin, RequestDraft, RunContext, hookimpl, tool
from greenroom import events as ev
from greenroom.config import AgentConfig, ConfigError
from greenroom.models import Message, ModelRequest, supports_programmatic_calls
from greenroom.plugins.discovery import make_plugin_host
from greenroom.run.runtime import Runtime
from greenroom.tools import ToolDescriptor

pytestmark = pytest.mark.anyio

CALLER = {"type": "program", "caller_id": "call_prog"}
PROGRAM = {
    "type": "program",
    "id": "prog_1",
    "call_id": "call_prog",
    "code": "const a = await tools.add({a: 2, b: 3});\nconst b = await tools.add({a, b: 5});\ntext(String(b));",
    "fingerprint": "fp-opaque-1",
}


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


class FromCode(Plugin):
    """Lets the model's program call every tool sent, as code mode does with a model that can."""

    name = "from-code"

    @hookimpl
    def greenroom_before_inference(self, ctx: RunContext, request: RequestDraft) -> None:
        if ctx.hosted_programmatic_calls:
            request.programmatic = {d.name for d in request.tools}


def program_call(call_id: str, args: str) -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": "add",
        "arguments": args,
        "caller": CALLER,
        "status": "completed",
    }


FINISHED = {"type": "program_output", "id": "po_1", "call_id": "call_prog", "result": "10", "status": "completed"}


async def test_the_request_offers_programmatic_calling_for_exactly_those_tools(make_openai) -> None:
    request = ModelRequest(
        system=(),
        tools=(add.descriptor, ToolDescriptor("now", "The time.")),
        messages=(Message("user", "add"),),
        programmatic=frozenset({"add"}),
    )
    model = make_openai(api="responses", programmatic=True)
    assert supports_programmatic_calls(model)
    tools = model.build_body(request)["tools"]
    assert tools[0]["name"] == "add" and tools[0]["allowed_callers"] == ["direct", "programmatic"]
    assert tools[1]["name"] == "now" and "allowed_callers" not in tools[1]
    assert tools[2] == {"type": "programmatic_tool_calling"}
    default = make_openai(api="responses")  # opt-in: no model list to go by
    assert not supports_programmatic_calls(default)
    assert all("allowed_callers" not in t and t["type"] == "function" for t in default.build_body(request)["tools"])


def test_programmatic_calling_needs_the_responses_api() -> None:
    from greenroom_openai import make_openai_model

    with pytest.raises(ConfigError) as caught:
        make_openai_model("gpt-5.5", {"api": "chat", "programmatic": True})
    assert caught.value.path == "model.programmatic"
    assert not supports_programmatic_calls(make_openai_model("gpt-5.5", {"api": "responses"}))


@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
async def test_the_run_answers_the_calls_of_the_models_program(
    server: FakeLLMServer, make_openai: Callable[..., Any], streamed: bool
) -> None:
    turns = [
        [PROGRAM, program_call("call_1", '{"a": 2, "b": 3}')],
        [program_call("call_2", '{"a": 5, "b": 5}')],
        [FINISHED, message_item("The total is 10.")],
    ]
    for output in turns:
        server.push(Reply(stream=responses_stream(output)) if streamed else Reply(body=responses_object(output)))
    model = make_openai(api="responses", programmatic=True)
    rt = Runtime(
        model=model, tools=[add], host=make_plugin_host(records=[], extra=[FromCode()]), agent=AgentConfig(max_steps=5)
    )
    results: list[ev.ToolExecuted] = []
    rt.events.subscribe(lambda e: results.append(e) if isinstance(e, ev.ToolExecuted) else None)
    heard: list[str] = []
    outcome = await rt.session().run("add 2 and 3, then 5", on_text=heard.append if streamed else None)
    assert outcome.stop_reason == "final" and outcome.text == "The total is 10."
    assert bool(heard) is streamed
    assert [(e.tool, e.content) for e in results] == [("add", "5"), ("add", "10")]  # ordinary calls of the run

    second, third = (r.body["input"] for r in server.requests[1:])
    assert second[1] == PROGRAM  # whole: its id and fingerprint go back
    assert second[2] == {
        "type": "function_call",
        "call_id": "call_1",
        "name": "add",
        "arguments": '{"a": 2, "b": 3}',
        "caller": CALLER,
    }
    assert second[3] == {"type": "function_call_output", "call_id": "call_1", "output": "5", "caller": CALLER}
    assert third[4]["caller"] == CALLER and third[5] == {
        "type": "function_call_output",
        "call_id": "call_2",
        "output": "10",
        "caller": CALLER,
    }
    await model.aclose()
