"""Request accounting describes whatever a request holds without raising: megabyte
messages, arguments nested past the json module's recursion, text that is not valid
UTF-8; and its counts and prefix hash stay what they were for ordinary requests."""

from __future__ import annotations

import hashlib
import random

from greenroom.models import Message, ModelRequest, SystemSection, ToolCall
from greenroom.tokens.accounting import RequestAccounting, message_tokens
from greenroom.tokens.counting import compact_json, count_tokens, tool_json
from greenroom.tools import ToolDescriptor


def request(messages: list[Message], system: str = "You help.", tools: tuple[ToolDescriptor, ...] = ()) -> ModelRequest:
    return ModelRequest((SystemSection("agent", system),), tools, tuple(messages), step=1)


def big_text(chars: int) -> str:
    rng = random.Random(4)
    words = ["GET", "/api/items", "200", "12ms", "ERROR", "retry", "naïve", "中文", "🙂", "x=1;"]
    out = " ".join(rng.choice(words) + ("\n" if rng.random() < 0.1 else "") for _ in range(chars // 4))
    return out[:chars]


def test_an_ordinary_request_is_counted_and_hashed_as_before() -> None:
    tool = ToolDescriptor(
        "search_docs", "Search the docs.", {"type": "object", "properties": {"q": {"type": "string"}}}
    )
    call = ToolCall("c1", "search_docs", {"q": "cache"})
    messages = [
        Message("user", "how do caches work?"),
        Message("assistant", "", tool_calls=(call,)),
        Message("tool", "caches keep things", tool_call_id="c1", name="search_docs"),
    ]
    sent = RequestAccounting().describe_request(request(messages, tools=(tool,)))
    assert sent.system_tokens == count_tokens("You help.")
    assert sent.tools_tokens == count_tokens(tool_json(tool))
    assert sent.messages_tokens == (
        count_tokens("how do caches work?")
        + count_tokens("search_docs")
        + count_tokens(compact_json({"q": "cache"}))
        + count_tokens("caches keep things")
    )
    # the documented prefix: each tool's JSON and a newline, then the stable system text
    h = hashlib.sha256()
    h.update(tool_json(tool).encode() + b"\n")
    h.update(b"\x00system\x00" + b"You help.")
    assert sent.prefix_hash == h.hexdigest()[:16]


def test_megabyte_messages_are_counted() -> None:
    text = big_text(2_500_000)
    sent = RequestAccounting().describe_request(request([Message("user", "read it"), Message("tool", text)]))
    assert sent.messages_tokens == count_tokens("read it") + count_tokens(text)
    assert sent.messages_tokens > 200_000  # past the encoder's own limit


def test_a_huge_system_prompt_is_counted() -> None:
    system = big_text(1_200_000)
    sent = RequestAccounting().describe_request(request([Message("user", "hi")], system=system))
    assert sent.system_tokens == count_tokens(system) > 0


def test_arguments_nested_past_the_json_modules_recursion_are_counted() -> None:
    args: dict[str, object] = {"x": 1}
    for _ in range(3_000):
        args = {"a": args}
    m = Message("assistant", "", tool_calls=(ToolCall("c1", "deep", args),))
    assert message_tokens(m) == count_tokens("deep") + count_tokens('{"a":' * 3_000 + '{"x":1}' + "}" * 3_000)


def test_raw_arguments_that_are_not_json_are_counted_as_sent() -> None:
    m = Message("assistant", "", tool_calls=(ToolCall("c1", "f", None, "{not json"),))
    assert message_tokens(m) == count_tokens("f") + count_tokens("{not json")


def test_text_with_a_lone_surrogate_is_counted_and_hashed() -> None:
    """A server's JSON may carry "\\ud800"; it is not UTF-8, and must not end a run."""
    tool = ToolDescriptor("odd", "A description with a lone \ud800 surrogate.")
    req = request([Message("user", "bad \udc00 text")], system="system \ud83d", tools=(tool,))
    acc = RequestAccounting()
    first = acc.describe_request(req)
    assert first.messages_tokens > 0 and first.tools_tokens > 0 and first.system_tokens > 0
    assert acc.describe_request(req).prefix_hash == first.prefix_hash  # stable from step to step
    other = request([Message("user", "x")], system="system \ud83e", tools=(tool,))
    assert RequestAccounting().describe_request(other).prefix_hash != first.prefix_hash


def test_tools_left_to_a_hosted_search_are_reported_and_hashed_whatever_object_holds_them() -> None:
    """A native step sends every tool and marks the deferred ones; an accounting that has
    seen the array (or an equal one from another run) reports the same names, tokens and
    prefix for an equal set, and the new ones for a set that differs."""
    tools = tuple(ToolDescriptor(f"tool_{i}", f"Tool number {i}.") for i in range(6))
    acc = RequestAccounting()

    def sent(array: tuple[ToolDescriptor, ...], deferred: frozenset[str]) -> tuple[str, int, tuple[str, ...]]:
        req = ModelRequest((SystemSection("agent", "You help."),), array, (), step=1, deferred=deferred)
        out = acc.describe_request(req, hosted_search=True)
        return out.prefix_hash, out.tools_tokens, out.deferred_tools

    first = sent(tools, frozenset({"tool_1", "tool_4"}))
    assert first[2] == ("tool_1", "tool_4")
    assert first[1] == sum(count_tokens(tool_json(d)) for d in tools if d.name not in {"tool_1", "tool_4"})
    # the same content in new objects, as a new run builds them, and then again
    assert sent(tuple(tools), frozenset(["tool_4", "tool_1"])) == first
    assert sent(tuple(list(tools)), frozenset(["tool_1", "tool_4"])) == first
    other = sent(tools, frozenset({"tool_2"}))
    assert other[2] == ("tool_2",) and other[0] != first[0]
    assert sent(tools, frozenset({"tool_1", "tool_4"})) == first
    # without a hosted search every tool is counted, and the prefix is the plain one
    plain = RequestAccounting().describe_request(
        ModelRequest((SystemSection("agent", "You help."),), tools, (), step=1, deferred=frozenset({"tool_1"}))
    )
    assert plain.deferred_tools == () and plain.tools_tokens == sum(count_tokens(tool_json(d)) for d in tools)
