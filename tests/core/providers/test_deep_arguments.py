"""The OpenAI provider given tool-call arguments nested 1,000 levels deep (JSON text that
``json.loads`` cannot read without running out of stack): the run goes on, the model
reads that they are nested too deeply, and the next request replays exactly what it sent."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from support.fake_llm_server import FakeLLMServer, Reply, chat_completion, openai_tool_call

from greenroom._support.arguments import MAX_ARGUMENT_DEPTH
from greenroom.plugins.discovery import make_plugin_host
from greenroom.run.runtime import Runtime
from greenroom.tools import tool

pytestmark = pytest.mark.anyio

DEEP = '{"data":' + '{"a":' * 999 + "{}" + "}" * 1_000


@tool
def store(data: dict) -> str:  # type: ignore[type-arg]
    """Store a document."""
    return "stored"


async def test_deep_arguments_from_the_openai_api_become_an_error_result(
    server: FakeLLMServer, make_openai: Callable[..., Any]
) -> None:
    server.push(
        Reply(body=chat_completion(None, [openai_tool_call("call_1", "store", DEEP)])),
        Reply(body=chat_completion(None, [openai_tool_call("call_2", "store", '{"data": {"ok": true}}')])),
        Reply(body=chat_completion("done")),
    )
    rt = Runtime(model=make_openai(), tools=[store], host=make_plugin_host(records=[]))
    s = rt.session()
    outcome = await s.run("store it")
    assert outcome.stop_reason == "final" and outcome.text == "done"
    first, second = [m for m in s.messages if m.role == "tool"]
    assert first.is_error and f"more than {MAX_ARGUMENT_DEPTH} levels" in first.content
    assert second.content == "stored"
    # the second request carries the model's own text back, byte for byte, and the answer
    replayed = server.requests[1].body["messages"]
    (assistant,) = [m for m in replayed if m["role"] == "assistant"]
    assert assistant["tool_calls"][0]["function"]["arguments"] == DEEP
    assert replayed[-1]["role"] == "tool" and "nested too deeply" in replayed[-1]["content"]
