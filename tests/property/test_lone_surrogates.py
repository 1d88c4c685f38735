"""Text holding a lone surrogate, found while building the random-turns property.

Valid JSON can escape half of a surrogate pair (``"\\ud800"``); ``json.loads`` turns it
into a Python string that has no UTF-8 form. A model's argument text can hold one, and
so can a tool's output (bytes decoded with ``surrogateescape``). The trace and the session
are UTF-8 files, and writing the first such character raised ``UnicodeEncodeError``: the
trace's listener ended the run with stop reason ``error``, and ``Session.save`` saved
nothing. The run, its trace and its saved session must take such text like any other.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from greenroom import tool
from greenroom.events import TraceWriter
from greenroom.run.runtime import Runtime

pytestmark = pytest.mark.anyio

LONE = "a\ud800b"


@tool
def echo(text: str) -> str:
    """Echo the text back."""
    return text


@tool
def undecodable() -> str:
    """Read a log whose bytes are not UTF-8, as a server's output can be."""
    return b"level=info msg=\xff\xfe".decode("utf-8", "surrogateescape")


def trace_kinds(path: Path) -> list[str]:
    return [json.loads(line)["kind"] for line in path.read_text(encoding="utf-8").split("\n") if line]


async def run_traced(make_runtime: Callable[..., Runtime], tmp_path: Path, turns: list[dict[str, Any]]) -> Any:
    rt = make_runtime([*turns, {"text": "done"}], tools=[echo, undecodable])
    trace = TraceWriter(tmp_path / "trace.jsonl")
    rt.events.subscribe(trace)
    session = rt.session()
    try:
        outcome = await session.run("go")
    finally:
        trace.close()
    return rt, session, outcome


async def test_argument_text_with_a_lone_surrogate_is_traced_and_the_run_goes_on(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    call = {"tool_calls": [{"name": "echo", "arguments": '{"text": "a\\ud800b"}'}]}
    _, session, outcome = await run_traced(make_runtime, tmp_path, [call])
    assert outcome.stop_reason == "final"
    assert [m.content for m in session.messages if m.role == "tool"] == [LONE]
    kinds = trace_kinds(tmp_path / "trace.jsonl")
    assert kinds[-1] == "run_end" and "tool_result" in kinds


async def test_a_tool_result_with_a_lone_surrogate_is_traced_and_the_run_goes_on(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    _, session, outcome = await run_traced(make_runtime, tmp_path, [{"tool_calls": [{"name": "undecodable"}]}])
    assert outcome.stop_reason == "final"
    assert [m.content for m in session.messages if m.role == "tool"] == [undecodable()]
    assert trace_kinds(tmp_path / "trace.jsonl")[-1] == "run_end"


async def test_a_session_holding_lone_surrogates_saves_and_loads_back(
    make_runtime: Callable[..., Runtime], tmp_path: Path
) -> None:
    rt = make_runtime(
        [
            {"tool_calls": [{"name": "echo", "arguments": '{"text": "a\\ud800b"}'}]},
            {"tool_calls": [{"name": "undecodable"}]},
            {"text": "done"},
        ],
        tools=[echo, undecodable],
    )
    session = rt.session()
    assert (await session.run("go")).stop_reason == "final"
    path = session.save(tmp_path / "session.json")
    assert rt.load_session(path).messages == session.messages
