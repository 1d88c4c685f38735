"""``greenroom run`` end to end against the fake server, as a user runs it: a config
file with ``[model] base_url``, deferred tools in dispatch mode, a trace. The request
prefix (tools + system) must be byte-identical on every step, and provider failures
must reach the user as one clean line (status and the provider's message)."""

from __future__ import annotations

import gc
import json
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm_server import (
    ANTHROPIC_KEY_ENV,
    OPENAI_KEY_ENV,
    FakeLLMServer,
    Recorded,
    Reply,
    anthropic_error,
    anthropic_message,
    array_items_raw,
    chat_completion,
    openai_error,
    openai_tool_call,
    top_level_raw,
)
from typer.testing import CliRunner

from greenroom.cli import app

TOOLS_PY = '''
from greenroom import tool


@tool
def shout(text: str) -> str:
    """Upper-case a text.

    Args:
        text: What to shout.
    """
    return text.upper()


@tool
def whisper(text: str) -> str:
    """Lower-case a text.

    Args:
        text: What to whisper.
    """
    return text.lower()


TOOLS = [shout, whisper]
'''

# One entry per step: (tool, raw argument text) or the final answer. The model finds
# shout through ToolSearch, calls it through deferred_tool_call, then sends a call
# whose JSON is cut off, sees the error, and answers.
SCRIPT: list[tuple[str, str] | str] = [
    ("ToolSearch", '{"query": "select:shout"}'),
    ("deferred_tool_call", '{"tool_name": "shout", "arguments": {"text": "five"}}'),
    ("deferred_tool_call", '{"tool_name": "shout", "arguments": '),
    "It is FIVE.",
]


def write_config(tmp_path: Path, provider: str, server: FakeLLMServer, **model: Any) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    if provider == "openai":
        model_lines = {"base_url": server.url + "/v1", "api_key_env": OPENAI_KEY_ENV}
    else:
        model_lines = {"base_url": server.url, "api_key_env": ANTHROPIC_KEY_ENV}
    model_lines.update(model)
    table = "\n".join(f"{k} = {json.dumps(v)}" for k, v in model_lines.items())
    config = tmp_path / "agent.toml"
    config.write_text(
        f"""
[agent]
model = "{provider}:test-model"
system_prompt = "You shout."
max_steps = 6

[model]
{table}

[tools]
python = ["tools.py:TOOLS"]

[plugins]
disable = ["priors-persistence"]  # nothing written outside tmp_path

[plugins.deferred-tools]
enabled = true
strategy = "dispatch"
"""
    )
    return config


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    # `greenroom run` never closes its model's SDK client (the runtime registers no
    # closer for the model), so the garbage collector does; collect it now, while no
    # event loop runs, or the SDK's finalizer tries to close the finished loop's
    # sockets inside whichever test runs next.
    gc.collect()
    return result


def steps_so_far(rec: Recorded) -> int:
    return sum(1 for m in rec.body["messages"] if m["role"] == "assistant")


def openai_responder(rec: Recorded) -> Reply:
    step = steps_so_far(rec)
    turn = SCRIPT[step]
    if isinstance(turn, str):
        return Reply(body=chat_completion(turn, prompt_tokens=1500, cached_tokens=1280))
    name, args = turn
    return Reply(body=chat_completion(None, [openai_tool_call(f"call_{step}", name, args)], cached_tokens=1280 * step))


def anthropic_responder(rec: Recorded) -> Reply:
    step = steps_so_far(rec)
    turn = SCRIPT[step]
    if isinstance(turn, str):
        return Reply(body=anthropic_message([{"type": "text", "text": turn}], cache_read=1400))
    name, args = turn
    try:
        tool_input: Any = json.loads(args)
    except ValueError:
        tool_input = args  # what a broken proxy in front of Claude can send
    block = {"type": "tool_use", "id": f"toolu_{step}", "name": name, "input": tool_input}
    return Reply(body=anthropic_message([block], cache_read=1400 * step, cache_write=50))


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_greenroom_run_in_dispatch_mode_keeps_the_prefix_byte_identical(
    tmp_path: Path, server: FakeLLMServer, provider: str
) -> None:
    server.responder = openai_responder if provider == "openai" else anthropic_responder
    config = write_config(tmp_path, provider, server)
    trace = tmp_path / "trace.jsonl"

    result = invoke("run", str(config), "shout five", "--trace", str(trace), "-q")

    assert result.exit_code == 0, result.output
    assert result.output.strip() == "It is FIVE."
    assert len(server.requests) == 4

    tops = [top_level_raw(r.raw) for r in server.requests]
    if provider == "openai":
        prefixes = [(t["tools"], array_items_raw(t["messages"])[0]) for t in tops]
    else:
        prefixes = [(t["tools"], t["system"]) for t in tops]
    assert all(p == prefixes[0] for p in prefixes), "the tools array or the system prompt changed between steps"

    # deferred: the tools array holds the dispatch tools, the real ones are only listed
    tools = json.loads(prefixes[0][0])
    names = [t["function"]["name"] if provider == "openai" else t["name"] for t in tools]
    assert set(names) == {"ToolSearch", "deferred_tool_call", "read_result"}
    system = json.loads(prefixes[0][1])
    system_text = system["content"] if provider == "openai" else " ".join(b["text"] for b in system)
    assert "You shout." in system_text and "shout" in system_text.replace("You shout.", "")

    # the schema came back in a tool result, the call ran, the broken one was an error
    final = server.requests[-1].body["messages"]
    if provider == "openai":
        results = [m["content"] for m in final if m["role"] == "tool"]
    else:
        results = [
            b["content"] for m in final if m["role"] == "user" for b in m["content"] if b["type"] == "tool_result"
        ]
    assert len(results) == 3
    assert '"text"' in results[0]  # shout's parameters, loaded by ToolSearch
    assert results[1] == "FIVE"
    assert "not a JSON object" in results[2]

    # the trace agrees: one prefix hash for the whole run, and usage with cache reads
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len({e["prefix_hash"] for e in events if e["kind"] == "request"}) == 1
    cached = [e["cached_input_tokens"] for e in events if e["kind"] == "response"]
    assert cached == ([0, 1280, 2560, 1280] if provider == "openai" else [0, 1400, 2800, 1400])


@pytest.mark.parametrize(
    ("provider", "reply", "expected"),
    [
        (
            "openai",
            Reply(500, openai_error("The server had an error processing your request.", "server_error")),
            "openai:test-model: HTTP 500 from {url}/v1/chat/completions: "
            "The server had an error processing your request. (server_error)",
        ),
        (
            "anthropic",
            Reply(401, anthropic_error("authentication_error", "invalid x-api-key")),
            "anthropic:test-model: HTTP 401 from {url}/v1/messages: invalid x-api-key (authentication_error)",
        ),
        (
            "anthropic",
            Reply(429, anthropic_error("rate_limit_error", "Number of requests exceeded"), {"retry-after": "3600"}),
            "anthropic:test-model: HTTP 429 from {url}/v1/messages: Number of requests exceeded (rate_limit_error)",
        ),
    ],
    ids=["openai-500", "anthropic-401", "anthropic-429-long-retry-after"],
)
def test_provider_errors_reach_the_user_as_one_clean_line(
    tmp_path: Path, server: FakeLLMServer, provider: str, reply: Reply, expected: str
) -> None:
    server.push(reply)
    config = write_config(tmp_path, provider, server, max_retries=0)
    result = invoke("run", str(config), "hi", "-q")
    assert result.exit_code == 1
    assert "Traceback" not in result.output
    assert expected.format(url=server.url) in " ".join(result.output.split())


def test_timeouts_and_missing_keys_are_clean_errors(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.push(Reply(hang=True))
    config = write_config(tmp_path, "openai", server, max_retries=0, timeout=0.3)
    result = invoke("run", str(config), "hi", "-q")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "openai:test-model: timed out calling" in result.output and "no answer within 0.3 s" in result.output

    monkeypatch.delenv(ANTHROPIC_KEY_ENV)
    config = write_config(tmp_path, "anthropic", server)
    result = invoke("run", str(config), "hi", "-q")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"environment variable {ANTHROPIC_KEY_ENV} is not set" in " ".join(result.output.split())
    assert len(server.requests) == 1  # only the hung one: no call without a key
