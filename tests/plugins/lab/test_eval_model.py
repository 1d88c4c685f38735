"""``greenroom eval --agent model`` with no key and no network: the scripted provider (a
policy file that searches, dispatches and answers, as docs/eval.md shows) runs sessions
of several requests, each request reading the conversation before it; its usage is what
the report bills; a request past ``--context-window`` is never sent."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from support.eval_testutil import write_catalog
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

POLICY = '''
import json
from greenroom import Message, ToolCall

seen = []


def agent(request):
    """Search the latest request's words, call the first tool found, then answer."""
    seen.append(request)
    last = max(i for i, m in enumerate(request.messages) if m.role == "user")
    since = request.messages[last + 1 :]
    step = len(since)
    if step == 0:
        query = request.messages[last].content
        return Message("assistant", "", tool_calls=(ToolCall(f"s{len(seen)}", "ToolSearch", {"query": query}),))
    if step == 2:
        found = since[1].content.split("<function>")[1].split("</function>")[0]
        name = json.loads(found)["name"]
        call = {"tool_name": name, "arguments": {"city": "Paris"}}
        return Message("assistant", "", tool_calls=(ToolCall(f"c{len(seen)}", "deferred_tool_call", call),))
    return "Done."
'''


def cli(*args: str) -> Any:
    return CliRunner().invoke(plugin_cli(), ["eval", *args], env={"COLUMNS": "80"})


@pytest.fixture
def files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Path, Path]]:
    tools, _ = write_catalog(tmp_path)
    tasks = tmp_path / "weather.jsonl"
    lines = [
        {"id": "paris", "query": "What is the weather forecast for Paris tomorrow?", "gold": ["getWeatherForecast"]},
        {"id": "rome", "query": "Tell me the weather forecast in Rome.", "gold": ["getWeatherForecast"]},
    ]
    tasks.write_text("\n".join(json.dumps(line) for line in lines) + "\n")
    (tmp_path / "eval_policy.py").write_text(POLICY)
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tools, tasks
    sys.modules.pop("eval_policy", None)  # each test's policy starts with nothing seen


def test_a_scripted_model_runs_sessions_of_several_requests_offline(files: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = files
    args = ["--tools", str(tools), "--tasks", str(tasks), "--agent", "model", "--model", "scripted:eval_policy:agent"]
    out = ["--out", str(tmp_path / "o"), "--json"]
    result = cli(*args, "--arms", "dispatch", "--sessions", "3", "--requests", "2", *out)
    assert result.exit_code == 0, result.output
    (arm,) = json.loads(result.stdout)["arms"]
    assert arm["sessions"] == 3 and arm["errors"] == 0 and arm["success"] == 1.0
    assert arm["steps_per_session"] == 2 * 3  # per request: a search, a dispatched call, the answer
    assert arm["input_tokens_per_session"] > 0 and arm["cost_no_cache_per_session"] >= arm["cost_per_session"] > 0
    assert arm["context_window"] == 0  # a scripted model has none
    sessions = [json.loads(line) for line in (tmp_path / "o" / "sessions.jsonl").read_text().splitlines()]
    for session in sessions:
        first, second = session["requests"]
        assert [c["tool"] for c in first["calls"]] == ["getWeatherForecast"] and first["done"]
        assert first["calls"][0]["arguments"] == {"city": "Paris"} and second["searches"]
    import eval_policy  # the policy's module, as the runtime imported it

    later = [r for r in eval_policy.seen if sum(m.role == "user" for m in r.messages) == 2]
    assert later and all(len(r.messages) > 4 for r in later)  # the second request reads the first's conversation


def test_a_request_past_the_context_window_is_not_sent_to_the_model(files: tuple[Path, Path], tmp_path: Path) -> None:
    tools, tasks = files
    args = ["--tools", str(tools), "--tasks", str(tasks), "--agent", "model", "--model", "scripted:eval_policy:agent"]
    out = ["--out", str(tmp_path / "o")]
    result = cli(*args, "--arms", "all-eager,dispatch", "--sessions", "2", "--context-window", "2000", *out)
    assert result.exit_code == 0, result.output
    said = " ".join(result.stdout.split())
    assert "all-eager: 2 sessions ended at a request past the context window of 2,000 tokens" in said
    import eval_policy

    # only dispatch's requests reached the model: 2 sessions of 3 requests, 3 steps each
    assert len(eval_policy.seen) == 2 * 3 * 3
    assert all(any(t.name == "ToolSearch" for t in r.tools) for r in eval_policy.seen)
