"""The anthropic provider against a local server speaking the Messages wire format:
system blocks, tools, tool_use / tool_result mapping, cache breakpoint placement, usage
with cache reads and writes, retries, errors, timeouts and cancellation."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import anyio
import anyio.to_thread
import attrs
import pytest
from support.fake_llm_server import (
    ANTHROPIC_KEY_ENV,
    FakeLLMServer,
    Reply,
    SleepRecorder,
    anthropic_error,
    anthropic_message,
)

from greenroom.config import ConfigError
from greenroom.models import Message, ModelError, ModelRequest, SystemSection, ToolCall
from greenroom.providers import (
    MissingApiKeyError,
    MissingExtraError,
    ProviderRateLimitError,
    ProviderRequestError,
    ProviderServerError,
    ProviderTimeoutError,
)
from greenroom.tools import ToolDescriptor
from greenroom_anthropic import AnthropicProvider, make_anthropic_model

pytestmark = pytest.mark.anyio

EPHEMERAL = {"type": "ephemeral"}
ADD = ToolDescriptor(
    "add",
    "Add two integers.",
    {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}}, "required": ["a", "b"]},
)
NOW = ToolDescriptor("now", "The current time.")


@pytest.fixture
def make(make_anthropic: Callable[..., Any]) -> Callable[..., Any]:
    return make_anthropic


def request(
    system: tuple[SystemSection, ...] = (
        SystemSection("agent", "You are terse."),
        SystemSection("hint", "Step 3 of 20.", stable=False),
        SystemSection("catalog", "Deferred tools: weather, stocks."),
    ),
    tools: tuple[ToolDescriptor, ...] = (ADD, NOW),
) -> ModelRequest:
    return ModelRequest(
        system=system,
        tools=tools,
        messages=(
            Message("user", "add 2 and 3, and tell me the time"),
            Message(
                "assistant",
                "On it.",
                tool_calls=(ToolCall("toolu_1", "add", {"a": 2, "b": 3}), ToolCall("toolu_2", "now", {})),
            ),
            Message("tool", "5", tool_call_id="toolu_1", name="add"),
            Message("tool", "clock unavailable", tool_call_id="toolu_2", name="now", is_error=True),
        ),
        step=2,
    )


def breakpoints(body: Any) -> list[str]:
    """Where cache_control markers sit, as readable paths."""
    found = []
    for i, t in enumerate(body.get("tools", [])):
        if "cache_control" in t:
            found.append(f"tools[{i}]")
    for i, b in enumerate(body.get("system", [])):
        if "cache_control" in b:
            found.append(f"system[{i}]")
    for i, m in enumerate(body["messages"]):
        for j, b in enumerate(m["content"]):
            if "cache_control" in b:
                found.append(f"messages[{i}].content[{j}]")
    return found


async def test_request_body_and_cache_breakpoints(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "5, and no clock."}])))
    await make(temperature=0.0, max_tokens=512).complete(request())
    (rec,) = server.requests
    assert rec.path == "/v1/messages"
    assert "anthropic-version" in rec.headers
    assert "sk-ant-test" in (rec.headers.get("x-api-key", "") + rec.headers.get("authorization", ""))
    assert rec.body == {
        "model": "claude-test",
        "max_tokens": 512,
        "temperature": 0.0,
        "system": [
            {"type": "text", "text": "You are terse."},
            # the breakpoint closes the stable prefix; the changing section comes after it
            {"type": "text", "text": "Deferred tools: weather, stocks.", "cache_control": EPHEMERAL},
            {"type": "text", "text": "Step 3 of 20."},
        ],
        "tools": [
            {"name": "add", "description": ADD.description, "input_schema": dict(ADD.parameters)},
            {
                "name": "now",
                "description": "The current time.",
                "input_schema": {"type": "object"},
                "cache_control": EPHEMERAL,
            },
        ],
        "messages": [
            {
                "role": "user",
                # where the previous request ended: that cache entry is read back here
                "content": [{"type": "text", "text": "add 2 and 3, and tell me the time", "cache_control": EPHEMERAL}],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "On it."},
                    {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 2, "b": 3}},
                    {"type": "tool_use", "id": "toolu_2", "name": "now", "input": {}},
                ],
            },
            {
                # consecutive tool results: one user turn
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "toolu_1", "content": "5", "is_error": False},
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "clock unavailable",
                        "is_error": True,
                        "cache_control": EPHEMERAL,  # the growing history's breakpoint
                    },
                ],
            },
        ],
    }
    assert breakpoints(rec.body) == ["tools[1]", "system[1]", "messages[0].content[0]", "messages[2].content[1]"]


async def test_no_breakpoint_without_a_stable_prefix(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    await make().complete(request(system=(SystemSection("hint", "changes", stable=False),), tools=()))
    body = server.requests[0].body
    assert "tools" not in body
    assert body["system"] == [{"type": "text", "text": "changes"}]  # nothing stable to cache
    assert breakpoints(body) == ["messages[0].content[0]", "messages[2].content[1]"]
    assert body["max_tokens"] == 4096  # required by the API; the default


async def test_prompt_cache_can_be_turned_off(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    await make(prompt_cache=False).complete(request())
    assert breakpoints(server.requests[0].body) == []


async def test_user_text_after_tool_results_shares_their_turn(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    base = request()
    req = attrs.evolve(base, messages=(*base.messages, Message("user", "and now?")))
    await make().complete(req)
    last = server.requests[0].body["messages"][-1]
    assert last["role"] == "user"
    assert [b["type"] for b in last["content"]] == ["tool_result", "tool_result", "text"]


async def test_empty_texts_never_become_empty_blocks(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    """The Messages API rejects empty text blocks: an empty system section is left out,
    an empty user turn or tool output gets a placeholder (the same every step)."""
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    req = ModelRequest(
        system=(SystemSection("agent", "You are terse."), SystemSection("notes", "")),
        tools=(NOW,),
        messages=(
            Message("user", ""),
            Message("assistant", "", tool_calls=(ToolCall("toolu_1", "now", {}),)),
            Message("tool", "", tool_call_id="toolu_1", name="now", is_error=True),
        ),
        step=2,
    )
    await make(prompt_cache=False).complete(req)
    body = server.requests[0].body
    assert [b["text"] for b in body["system"]] == ["You are terse."]
    blocks = [b for m in body["messages"] for b in m["content"]]
    assert all(b.get("text", "x") and b.get("content", "x") for b in blocks)


async def test_response_with_tool_use_and_cache_usage(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(
        Reply(
            body=anthropic_message(
                [
                    {"type": "text", "text": "Adding."},
                    {"type": "tool_use", "id": "toolu_9", "name": "add", "input": {"a": 4, "b": 5}},
                    {"type": "tool_use", "id": "toolu_10", "name": "now", "input": {}},
                ],
                input_tokens=12,
                output_tokens=50,
                cache_read=1800,
                cache_write=300,
            )
        )
    )
    response = await make().complete(request())
    assert response.message.content == "Adding."
    assert response.stop_reason == "tool_use"
    assert response.tool_calls == (
        ToolCall("toolu_9", "add", {"a": 4, "b": 5}),
        ToolCall("toolu_10", "now", {}),
    )
    usage = response.usage
    assert usage.cached_input_tokens == 1800
    assert usage.cache_write_tokens == 300
    assert usage.input_tokens == 12 + 1800 + 300  # every input token, like OpenAI's prompt_tokens
    assert usage.output_tokens == 50


async def test_overloaded_then_success(server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]) -> None:
    server.push(
        Reply(529, anthropic_error("overloaded_error", "Overloaded")),
        Reply(429, anthropic_error("rate_limit_error", "Number of request tokens exceeded"), {"retry-after": "2"}),
        Reply(body=anthropic_message([{"type": "text", "text": "ok"}])),
    )
    response = await make().complete(request())
    assert response.message.content == "ok"
    assert len(server.requests) == 3
    assert len(sleeps.waits) == 2 and sleeps.waits[1] == 2.0


@pytest.mark.parametrize(
    "failure",
    [
        Reply(429, anthropic_error("rate_limit_error", "This request would exceed the rate limit")),
        Reply(500, anthropic_error("api_error", "Internal server error")),
    ],
    ids=["429", "500"],
)
async def test_transient_error_then_success(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any], failure: Reply
) -> None:
    server.push(failure, Reply(body=anthropic_message([{"type": "text", "text": "ok"}], cache_read=900)))
    response = await make().complete(request())
    assert (response.message.content, response.usage.cached_input_tokens) == ("ok", 900)
    assert len(server.requests) == 2 and server.requests[0].raw == server.requests[1].raw
    assert len(sleeps.waits) == 1 and 0.375 <= sleeps.waits[0] <= 0.5  # backoff, no Retry-After sent


async def test_history_breakpoints_follow_the_session(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    """Step 1 caches the first user turn; step 2, after a wide parallel step (more blocks
    than the API looks back over), reads it through a marker on that same block."""
    server.responder = lambda rec: Reply(body=anthropic_message([{"type": "text", "text": "ok"}]))
    model = make()
    first = ModelRequest(system=(SystemSection("agent", "Be brief."),), tools=(NOW,), messages=(Message("user", "go"),))
    calls = tuple(ToolCall(f"toolu_{i}", "now", {}) for i in range(12))
    second = attrs.evolve(
        first,
        messages=(
            *first.messages,
            Message("assistant", "", tool_calls=calls),
            *(Message("tool", "12:00", tool_call_id=c.id, name="now") for c in calls),
        ),
    )
    await model.complete(first)
    await model.complete(second)
    one, two = (r.body for r in server.requests)
    assert breakpoints(one) == ["tools[0]", "system[0]", "messages[0].content[0]"]
    assert breakpoints(two) == ["tools[0]", "system[0]", "messages[0].content[0]", "messages[2].content[11]"]
    assert one["messages"][0] == two["messages"][0]  # the same bytes, marker included: a cache read
    assert len(two["messages"][1]["content"]) + len(two["messages"][2]["content"]) > 20


async def test_a_cancel_scope_cancels_the_http_call(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "ok"}])))
    model = make(timeout=30)
    await model.complete(request())  # the SDK is loaded and connected outside the window
    server.push(Reply(hang=True))
    with anyio.move_on_after(0.3) as scope:
        await model.complete(request())
    assert scope.cancelled_caught
    assert await anyio.to_thread.run_sync(lambda: server.wait_for(lambda: server.disconnects == 1))


async def test_errors_carry_status_and_the_providers_message(
    server: FakeLLMServer, sleeps: SleepRecorder, make: Callable[..., Any]
) -> None:
    server.responder = lambda rec: Reply(500, anthropic_error("api_error", "Internal server error"))
    with pytest.raises(ProviderServerError) as info:
        await make(max_retries=1).complete(request())
    assert isinstance(info.value, ModelError)
    assert (info.value.status, info.value.attempts) == (500, 2)
    assert "Internal server error (api_error)" in str(info.value)
    assert str(info.value).startswith("anthropic:claude-test: HTTP 500 from ")

    server.responder = None
    server.push(Reply(400, anthropic_error("invalid_request_error", "tools.0.input_schema: type must be object")))
    with pytest.raises(ProviderRequestError, match="input_schema: type must be object"):
        await make().complete(request())

    server.push(Reply(429, anthropic_error("rate_limit_error", "slow down"), {"retry-after": "999"}))
    with pytest.raises(ProviderRateLimitError, match="slow down"):
        await make().complete(request())


async def test_timeout(server: FakeLLMServer, make: Callable[..., Any]) -> None:
    server.push(Reply(hang=True))
    with pytest.raises(
        ProviderTimeoutError, match=r"anthropic:claude-test: timed out calling .*no answer within 0\.3 s"
    ):
        await make(timeout=0.3, max_retries=0).complete(request())


async def test_missing_key(server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch, make: Callable[..., Any]) -> None:
    monkeypatch.delenv(ANTHROPIC_KEY_ENV)
    with pytest.raises(MissingApiKeyError, match=ANTHROPIC_KEY_ENV):
        await make().complete(request())
    assert server.requests == []


def test_options() -> None:
    with pytest.raises(ConfigError, match="true or false"):
        make_anthropic_model("claude-test", {"prompt_cache": "yes"})
    with pytest.raises(ConfigError, match="never read from config files"):
        make_anthropic_model("claude-test", {"api_key": "sk-ant-x"})


def test_missing_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "anthropic", None)
    factory = AnthropicProvider().greenroom_model_providers()["anthropic"]
    with pytest.raises(MissingExtraError, match=r"pip install 'greenroom\[anthropic\]'"):
        factory("claude-test", {})


def cancelled_history() -> ModelRequest:
    """A session whose earlier run was cancelled while its two tools ran (so the calls
    have no results), resumed with a new user message; plus a stray result for no call."""
    return ModelRequest(
        system=(),
        tools=(ADD, NOW),
        messages=(
            Message("user", "add 2 and 3, and tell me the time"),
            Message(
                "assistant",
                "",
                tool_calls=(ToolCall("toolu_1", "add", {"a": 2, "b": 3}), ToolCall("toolu_2", "now", {})),
            ),
            Message("user", "never mind, just say hi"),
            Message("tool", "stale", tool_call_id="toolu_9", name="now"),
        ),
        step=1,
    )


async def test_unanswered_tool_calls_get_a_result_before_the_next_turn(
    server: FakeLLMServer, make: Callable[..., Any]
) -> None:
    server.push(Reply(body=anthropic_message([{"type": "text", "text": "hi"}])))
    await make(prompt_cache=False).complete(cancelled_history())
    (rec,) = server.requests
    messages = rec.body["messages"]
    # every tool_use is answered in the very next user turn, results before the text,
    # and the result that answers no call is not sent
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    blocks = messages[2]["content"]
    assert [b["type"] for b in blocks] == ["tool_result", "tool_result", "text"]
    assert [b["tool_use_id"] for b in blocks[:2]] == ["toolu_1", "toolu_2"]
    assert all(b["is_error"] and "did not complete" in b["content"] for b in blocks[:2])
    assert blocks[2]["text"] == "never mind, just say hi"
