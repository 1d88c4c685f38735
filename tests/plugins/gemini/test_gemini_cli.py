"""``greenroom run`` with a Gemini model against the fake server, as a user runs it: a
config file with ``[model] base_url``, deferred tools behind greenroom's own ToolSearch
(dispatch: the tools array and system instruction the same bytes on every step; inject:
found tools join the declarations), a trace; provider failures reach the user as one
clean line, and the key never shows."""

from __future__ import annotations

import gc
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from support.fake_llm_server import (
    GEMINI_KEY_ENV,
    FakeLLMServer,
    Recorded,
    Reply,
    gemini_call,
    gemini_error,
    gemini_response,
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


def write_config(tmp_path: Path, server: FakeLLMServer, strategy: str = "dispatch", **model: Any) -> Path:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    table = {"base_url": server.url, "api_key_env": GEMINI_KEY_ENV, **model}
    lines = "\n".join(f"{k} = {json.dumps(v)}" for k, v in table.items())
    config = tmp_path / "agent.toml"
    config.write_text(
        f"""
[agent]
model = "gemini:gemini-3-flash"
system_prompt = "You shout."
max_steps = 6

[model]
{lines}

[tools]
python = ["tools.py:TOOLS"]

[plugins]
disable = ["priors-persistence"]  # nothing written outside tmp_path

[plugins.deferred-tools]
enabled = true
strategy = "{strategy}"
"""
    )
    return config


def invoke(*args: str) -> Any:
    result = CliRunner().invoke(app, list(args), env={"COLUMNS": "200"})
    gc.collect()  # the model's SDK client is collected now, while no event loop runs
    return result


def steps(rec: Recorded) -> int:
    return sum(1 for c in rec.body["contents"] if c["role"] == "model")


def responder(script: list[tuple[str, Any] | str]) -> Any:
    def answer(rec: Recorded) -> Reply:
        step = steps(rec)
        turn = script[step]
        if isinstance(turn, str):
            return Reply(body=gemini_response([{"text": turn}], prompt_tokens=1500, cached_tokens=1280))
        name, args = turn
        return Reply(body=gemini_response([gemini_call(name, args, call_id=f"fc_{step}")], cached_tokens=1280 * step))

    return answer


def declared(rec: Recorded) -> list[str]:
    return [d["name"] for d in rec.body["tools"][0]["functionDeclarations"]]


def test_dispatch_keeps_the_prefix_byte_identical(tmp_path: Path, server: FakeLLMServer) -> None:
    # ToolSearch finds shout, deferred_tool_call calls it, a broken call is answered, done
    server.responder = responder(
        [
            ("ToolSearch", {"query": "select:shout"}),
            ("deferred_tool_call", {"tool_name": "shout", "arguments": {"text": "five"}}),
            ("deferred_tool_call", {"tool_name": "shout", "arguments": [1]}),
            "It is FIVE.",
        ]
    )
    trace = tmp_path / "trace.jsonl"
    result = invoke("run", str(write_config(tmp_path, server)), "shout five", "--trace", str(trace), "-q")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "It is FIVE."
    assert len(server.requests) == 4
    tops = [top_level_raw(r.raw) for r in server.requests]
    prefixes = [(t["tools"], t["systemInstruction"]) for t in tops]
    assert all(p == prefixes[0] for p in prefixes), "the declarations or the system instruction changed"
    assert set(declared(server.requests[0])) == {"ToolSearch", "deferred_tool_call", "read_result"}  # the rest listed
    system = json.loads(prefixes[0][1])["parts"][0]["text"]
    assert system.startswith("You shout.") and "shout" in system.replace("You shout.", "")
    final = server.requests[-1].body["contents"]
    results = [p["functionResponse"]["response"] for c in final for p in c["parts"] if "functionResponse" in p]
    assert '"text"' in results[0]["output"]  # shout's schema, loaded by ToolSearch
    assert results[1] == {"output": "FIVE"}
    assert "error" in results[2]
    events = [json.loads(line) for line in trace.read_text().splitlines()]
    assert len({e["prefix_hash"] for e in events if e["kind"] == "request"}) == 1
    assert [e["cached_input_tokens"] for e in events if e["kind"] == "response"] == [0, 1280, 2560, 1280]


def test_inject_adds_found_tools_to_the_declarations(tmp_path: Path, server: FakeLLMServer) -> None:
    server.responder = responder(
        [("ToolSearch", {"query": "select:shout"}), ("shout", {"text": "five"}), "It is FIVE."]
    )
    result = invoke("run", str(write_config(tmp_path, server, "inject")), "shout five", "-q")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "It is FIVE."
    first, second, third = (declared(r) for r in server.requests)
    assert "shout" not in first and "ToolSearch" in first and "deferred_tool_call" not in first
    assert "shout" in second and second == third  # found, then called by its own name
    final = server.requests[-1].body["contents"]
    assert final[-1]["parts"] == [{"functionResponse": {"id": "fc_1", "name": "shout", "response": {"output": "FIVE"}}}]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        (
            Reply(500, gemini_error(500, "An internal error has occurred.", "INTERNAL")),
            "gemini:gemini-3-flash: HTTP 500 from {url}{path}: An internal error has occurred. (INTERNAL)",
        ),
        (
            Reply(400, gemini_error(400, "API key not valid. Please pass a valid API key.", "INVALID_ARGUMENT")),
            "gemini:gemini-3-flash: HTTP 400 from {url}{path}: "
            "API key not valid. Please pass a valid API key. (INVALID_ARGUMENT)",
        ),
    ],
    ids=["500", "400-bad-key"],
)
def test_provider_errors_reach_the_user_as_one_clean_line(
    tmp_path: Path, server: FakeLLMServer, reply: Reply, expected: str
) -> None:
    server.push(reply)
    result = invoke("run", str(write_config(tmp_path, server, max_retries=0)), "hi", "-q")
    assert result.exit_code == 1 and "Traceback" not in result.output
    path = server.requests[0].path  # /{the SDK's API version}/models/gemini-3-flash:generateContent
    assert path.endswith("/models/gemini-3-flash:generateContent")
    assert expected.format(url=server.url, path=path) in " ".join(result.output.split())


def test_timeouts_and_missing_keys_are_clean_errors(
    tmp_path: Path, server: FakeLLMServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.push(Reply(hang=True))
    result = invoke("run", str(write_config(tmp_path, server, max_retries=0, timeout=0.3)), "hi", "-q")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "gemini:gemini-3-flash: timed out calling" in result.output and "within 0.3 s" in result.output

    monkeypatch.delenv(GEMINI_KEY_ENV)
    result = invoke("run", str(write_config(tmp_path, server)), "hi", "-q")
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"environment variable {GEMINI_KEY_ENV} is not set" in " ".join(result.output.split())
    assert len(server.requests) == 1  # only the hung one: no call without a key


@pytest.mark.parametrize("status", [401, 500])
def test_the_cli_never_prints_the_key(
    tmp_path: Path,
    server: FakeLLMServer,
    monkeypatch: pytest.MonkeyPatch,
    status: int,
    caplog: pytest.LogCaptureFixture,
) -> None:
    key = "AIzaSyLIVE0123456789abcdefSECRET"
    monkeypatch.setenv(GEMINI_KEY_ENV, key)
    echo = gemini_error(status, f"API key not valid: {key}", "UNAUTHENTICATED" if status == 401 else "INTERNAL")
    server.push(Reply(status, echo, {"retry-after": "0"}), Reply(status, echo, {"retry-after": "0"}))
    trace = tmp_path / "trace.jsonl"
    with caplog.at_level(logging.WARNING):
        result = invoke("run", str(write_config(tmp_path, server, max_retries=1)), "hi", "-q", "--trace", str(trace))
    assert result.exit_code == 1, result.output
    output = " ".join(result.output.split())
    assert f"HTTP {status} from {server.url}" in output and "API key not valid: ***" in output
    assert len(server.requests) == (1 if status == 401 else 2)  # a 401 is not retried
    for text in (result.output, caplog.text, trace.read_text() if trace.exists() else ""):
        assert key not in text
