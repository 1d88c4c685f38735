"""Text that is not valid UTF-8 never ends a run: a file name from a Latin-1 folder (a
surrogate-escaped byte), a lone surrogate from a JSON escape, in the user's input (bytes
on the command line), a tool's result, the model's text and a catalog's descriptions.
The run counts it, searches it, traces it, saves and resumes it, and the command line
shows it as U+FFFD even where its streams are strict UTF-8."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from greenroom import RequestSent, Runtime, ToolResult, TraceWriter, load_catalog, make_plugin_host, tool
from greenroom.providers.scripted import ScriptedModel, StreamedModel
from greenroom.run.limits import bound_result, check_input
from greenroom.tokens.counting import count_tokens, count_tokens_upto

ESCAPED = "caf\udce9.txt"  # os.listdir of a Latin-1 name under a UTF-8 locale
LONE = "half \ud800 a pair"  # a JSON "\ud800" escape
BAD = f"{ESCAPED} {LONE}"


@tool
def list_files(pattern: str = "*") -> str:
    """List the files of the folder."""
    return f"{BAD}\nok.txt"


def catalog(tmp_path: Path) -> list[Any]:
    path = tmp_path / "catalog.jsonl"
    rows = [
        {
            "name": f"files_{i}",
            "description": f"Lists {BAD} and more, variant {i}",
            "parameters": {"type": "object", "properties": {"q": {"type": "string", "description": LONE}}},
        }
        for i in range(40)
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return list(load_catalog(path))


def test_counting_and_cutting_take_it() -> None:
    assert count_tokens(BAD) > 0 and count_tokens_upto(BAD * 10_000, 100) is None
    check_input(BAD, 1_000)
    cut, truncation = bound_result(ToolResult(BAD * 5_000), 200)
    assert truncation is not None and count_tokens_upto(cut.content, 200) is not None


def test_a_whole_run_takes_it_with_the_installed_plugins(tmp_path: Path) -> None:
    turns = [
        {"tool_calls": [{"name": "ToolSearch", "arguments": {"query": BAD}}]},
        {"tool_calls": [{"name": "list_files", "arguments": {"pattern": BAD}}]},
        {"text": f"Found {BAD}."},
    ]
    model = StreamedModel(ScriptedModel(turns, count_usage=True))
    # deferred tools, search ranking and priors, as a user's agent has them
    runtime = Runtime(model=model, tools=[list_files, *catalog(tmp_path)], host=make_plugin_host())
    events: list[Any] = []
    runtime.events.subscribe(events.append)
    trace = TraceWriter(tmp_path / "trace.jsonl")
    runtime.events.subscribe(trace)
    heard: list[str] = []

    async def go() -> Any:
        try:
            session = runtime.session()
            outcome = await runtime.run(session, f"list {BAD}", on_text=lambda d: heard.append(d.text))
            session.save(tmp_path / "s.json")
            resumed = runtime.load_session(tmp_path / "s.json")
            return outcome, session, resumed
        finally:
            await runtime.aclose()

    outcome, session, resumed = anyio.run(go)
    trace.close()
    assert outcome.stop_reason == "final" and outcome.text == f"Found {BAD}."
    assert "".join(heard) == outcome.text
    assert [m.content for m in resumed.messages] == [m.content for m in session.messages]
    assert any(BAD in m.content for m in session.messages if m.role == "tool")
    assert all(e.total_tokens > 0 for e in events if isinstance(e, RequestSent))
    written = [json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()]
    assert written[-1]["kind"] == "run_end" and written[0]["input"] == f"list {BAD}"


def strict_cli(cfg: Path, *args: str | bytes) -> subprocess.CompletedProcess[str]:
    env = {
        **os.environ,
        "PYTHONIOENCODING": "utf-8",  # strict: a lone surrogate would raise on write
        "COLUMNS": "300",
        "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    return subprocess.run(
        [sys.executable, "-m", "greenroom.cli", *args],
        cwd=cfg.parent,
        env=env,
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=120,
    )


@pytest.mark.slow
@pytest.mark.parametrize("stream", [True, False], ids=["streamed", "whole"])
def test_the_command_line_shows_it_even_on_strict_streams(tmp_path: Path, stream: bool) -> None:
    (tmp_path / "tools.py").write_text(
        "from greenroom import tool\n\n\n@tool\ndef list_files() -> str:\n"
        '    """List the files."""\n'
        f"    return {BAD!r}\n\n\nTOOLS = [list_files]\n"
    )
    turns = [{"tool_calls": [{"name": "list_files", "arguments": {}}]}, {"text": f"Files: {BAD}"}]
    (tmp_path / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (tmp_path / "catalog.jsonl").write_text(json.dumps({"name": "odd", "description": f"About {LONE}"}) + "\n")
    cfg = tmp_path / "agent.toml"
    cfg.write_text(
        f'[agent]\nid = "a"\nmodel = "scripted:turns.jsonl"\n[model]\nstream = {str(stream).lower()}\n'
        '[tools]\npython = ["tools.py:TOOLS"]\ncatalogs = ["catalog.jsonl"]\n[plugins]\nenable = ["scripted"]\n'
    )
    session = tmp_path / "s.json"
    argument = os.fsencode("list caf") + b"\xe9"  # not UTF-8: Python gets it surrogate-escaped
    for extra in ((), ("-q",)):
        done = strict_cli(cfg, "run", str(cfg), argument, "--session", str(session), *extra)
        assert done.returncode == 0, done.stderr
        assert "Files: caf\ufffd.txt half \ufffd a pair" in done.stdout and "Traceback" not in done.stderr
    saved = json.loads(session.read_text())
    assert saved["messages"][0]["content"] == "list caf\udce9"  # kept as it came, not replaced
    shown = strict_cli(cfg, "inspect", str(cfg), "--request")
    assert shown.returncode == 0, shown.stderr
    assert "About half \ufffd a pair" in shown.stdout
