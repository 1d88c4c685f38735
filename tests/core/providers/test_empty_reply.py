"""A model reply with neither text nor tool calls (``tool_calls: []`` and no content, or
no content blocks at all) is not a silent empty answer: ``greenroom run`` ends with stop
reason ``error`` and says so in one line, with the provider's own stop reason."""

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
    Reply,
    anthropic_message,
    chat_completion,
)
from typer.testing import CliRunner

from greenroom.cli import app


def openai_empty(finish_reason: str) -> dict[str, Any]:
    body = chat_completion(None, finish_reason=finish_reason)
    body["choices"][0]["message"]["tool_calls"] = []  # what some servers send for "no calls"
    return body


@pytest.mark.parametrize(
    ("provider", "body", "stop"),
    [
        ("openai", openai_empty("stop"), "stop"),
        ("openai", openai_empty("length"), "length"),
        ("anthropic", anthropic_message([], stop_reason="end_turn"), "end_turn"),
    ],
    ids=["openai", "openai-cut-short", "anthropic"],
)
def test_an_empty_reply_ends_the_run_with_an_error_a_user_sees(
    tmp_path: Path, server: FakeLLMServer, provider: str, body: dict[str, Any], stop: str
) -> None:
    server.push(Reply(body=body))
    openai = provider == "openai"
    base_url, key_env = (server.url + "/v1", OPENAI_KEY_ENV) if openai else (server.url, ANTHROPIC_KEY_ENV)
    config = tmp_path / "agent.toml"
    config.write_text(
        f'[agent]\nmodel = "{provider}:test-model"\n'
        f"[model]\nbase_url = {json.dumps(base_url)}\napi_key_env = {json.dumps(key_env)}\nmax_retries = 0\n"
        '[plugins]\ndisable = ["priors-persistence"]\n'
    )
    trace, session = tmp_path / "trace.jsonl", tmp_path / "session.json"
    args = ["run", str(config), "hi", "--trace", str(trace), "--session", str(session), "-q"]
    result = CliRunner().invoke(app, args, env={"COLUMNS": "200"})
    gc.collect()  # the SDK's client is closed now, while no event loop runs (see test_cli_run.py)

    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    said = " ".join(result.output.split())
    assert f"the model's reply was empty: no text and no tool calls (stop reason '{stop}')" in said, said
    end = json.loads(trace.read_text().splitlines()[-1])
    assert (end["kind"], end["stop_reason"], end["failure"]["error_type"]) == ("run_end", "error", "EmptyReply")
    saved = json.loads(session.read_text())
    assert [m["role"] for m in saved["messages"]] == ["user", "assistant"]  # kept whole, and resumable
