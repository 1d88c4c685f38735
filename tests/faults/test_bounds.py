"""Bounded results and inputs, through ``greenroom run``: about 1 MB of log text from a
Python tool or an MCP server reaches the model's next request cut to ``max_result_tokens``
with a note saying what was cut, and the session keeps that cut result; a user input of
about 2 MB is refused before any model call, and the session keeps what it held."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import pytest
from faults.fault_tools import LOG_FIRST_LINE, LOG_LAST_LINE

from greenroom import count_tokens

if TYPE_CHECKING:
    from conftest import Bench

HERE = Path(__file__).resolve().parent
LIMIT = 25_000  # the documented default of [agent] max_result_tokens


@pytest.mark.parametrize("source", ["python", pytest.param("mcp", marks=pytest.mark.slow)])
def test_a_megabyte_of_log_text_reaches_the_model_cut_with_a_note_and_is_saved_cut(
    request: pytest.FixtureRequest, bench: Bench, source: str
) -> None:
    extra = request.getfixturevalue("log_server") if source == "mcp" else ""
    tool = "logs__read_log" if source == "mcp" else "read_log"
    tools = () if source == "mcp" else ("TOOLS",)
    config = bench.agent(model=f"scripted:{HERE / 'fault_models.py'}:read_then_report", tools=tools, extra=extra)
    run = bench.run(config, "why is checkout slow?")
    end = run.ended("final", 0)
    assert end["error"] is None

    (cut,) = run.events("result_cut")
    assert cut["tool"] == tool and cut["original_chars"] > 1_000_000 and cut["limit"] == LIMIT
    saved = run.results()[tool]
    assert not saved["is_error"]
    content = saved["content"]
    assert count_tokens(content) <= LIMIT
    note = f"[greenroom cut this result: it was {cut['original_chars']:,} characters, over the limit of {LIMIT:,}"
    head = content.split("\n", 2)[:2]
    assert head[0].startswith(note) and "call the tool again with narrower arguments" in head[0]
    assert head[1] == LOG_FIRST_LINE and content.rstrip("\n").endswith(LOG_LAST_LINE)  # the log's head and tail

    # what the model read in its next request is what the session keeps
    read = json.loads(run.stdout)
    assert read == {"chars": len(content), "tokens": count_tokens(content), "is_error": False, "head": head}
    assert [r["content"] for r in run.events("tool_result")] == [content]
    requests = run.events("request")
    assert len(requests) == 2 and requests[1]["messages_tokens"] > requests[0]["messages_tokens"] + LIMIT - 1_000


def test_a_two_megabyte_input_is_refused_before_any_model_call_and_the_session_keeps_what_it_held(
    bench: Bench,
) -> None:
    config = bench.agent([{"text": "hello"}])
    first = bench.run(config, "hi")
    first.ended("final", 0)
    before = first.messages()

    huge = "the same line of a pasted log, over and over\n" * 45_000
    assert len(huge) > 2_000_000
    run = bench.run(config, huge)
    end = run.ended("error", 1)
    said = f"the input is over the limit of 200,000 tokens ({len(huge):,} characters); nothing was sent to the model"
    assert f"error: InputTooLongError: {said}" in run.stderr
    assert end["failure"]["error_type"] == "InputTooLongError" and said in end["error"]
    assert run.kinds() == ["run_start", "run_end"]  # no request: the model was never called
    assert run.stdout == ""

    session = run.session()
    assert session["messages"] == before and session["runs"] == 2  # saved, without the input
    after = bench.run(config, "a short question")
    after.ended("final", 0)
    assert [m["content"] for m in after.messages()] == ["hi", "hello", "a short question", "hello"]
