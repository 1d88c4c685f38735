"""What an evaluated session costs and what its results file keeps: the provider's usage
when it reports any, else the prompt-cache simulation over the requests greenroom
counted, with a session that follows another reading the prefix they share; results
that survive a stop, and a folder of another evaluation refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from greenroom import RequestSent, ResponseReceived
from greenroom_lab.costing import DEFAULT_PRICES, Request
from greenroom_lab.eval.record import SessionRecord, requests_of
from greenroom_lab.eval.results import EvalError, ResultsFile, SessionResult, Settings
from greenroom_lab.eval.runner import cost_without_cache, session_cost
from greenroom_lab.eval.tasks import Mix

SONNET = DEFAULT_PRICES["anthropic:claude-sonnet-4.5"]


def record(*steps: tuple[int, int], prefix: str = "p") -> SessionRecord:
    """A run's record from (messages tokens, reported input tokens) per request."""
    rec = SessionRecord()
    for messages, reported in steps:
        sent = RequestSent(system_tokens=100, tools_tokens=900, messages_tokens=messages, prefix_hash=prefix)
        rec.add_request(sent)
        rec.add_response(ResponseReceived(input_tokens=reported, output_tokens=20, text="done"))
    return rec


def test_requests_are_billed_block_by_block_as_the_messages_grow() -> None:
    rec = record((50, 0), (80, 0))
    first, second = requests_of(rec.steps, "s1")
    assert first.prefix_tokens == second.prefix_tokens == 1000
    assert first.message_tokens == (50,) and second.message_tokens == (50, 30)  # the new messages: one more block
    assert second.message_ids[0] == first.message_ids[0]  # the first block is the same, and cached
    assert rec.input_tokens == 1050 + 1080  # greenroom's counts when the model reports none
    cost, cached = session_cost(rec.steps, SONNET, None, "s1")
    assert cached == 1050
    assert cost == pytest.approx((1050 * 3.75 + 1050 * 0.30 + 30 * 3.75 + 40 * 15.0) / 1e6)
    # without the cache: every input token at the input price
    assert cost_without_cache(rec.steps, SONNET) == pytest.approx(((1050 + 1080) * 3.0 + 40 * 15.0) / 1e6)
    assert cost_without_cache(rec.steps, SONNET.without_cache()) == cost_without_cache(rec.steps, SONNET)


def test_the_next_request_of_a_session_reads_the_conversation_before_it_from_the_cache() -> None:
    first, second = record((50, 0), (80, 0)), record((120, 0), (150, 0))  # two runs of one session
    requests = requests_of([*first.steps, *second.steps], "s1")
    assert [r.message_tokens for r in requests[2:]] == [(50, 30, 40), (50, 30, 40, 30)]
    _, cached = session_cost([*first.steps, *second.steps], SONNET, None, "s1")
    assert cached == 1050 + 1080 + 1120  # every request reads all of the one before it


def test_a_session_that_follows_another_reads_the_prefix_they_share() -> None:
    first = record((50, 0))
    before = requests_of(first.steps, "s1")[-1]
    alone, _ = session_cost(record((60, 0)).steps, SONNET, None, "s2")
    followed, cached = session_cost(record((60, 0)).steps, SONNET, before, "s2")
    assert cached == 1000 and followed < alone  # tools and system read from the cache
    other, cached = session_cost(record((60, 0), prefix="q").steps, SONNET, before, "s2")
    assert cached == 0 and other == pytest.approx(alone)  # another prefix: nothing to read


def test_the_usage_a_provider_reported_is_billed_as_reported() -> None:
    rec = SessionRecord()
    rec.add_request(RequestSent(system_tokens=10, tools_tokens=10, messages_tokens=10, prefix_hash="p"))
    rec.add_response(
        ResponseReceived(input_tokens=5000, cached_input_tokens=3000, cache_write_tokens=1000, output_tokens=100)
    )
    cost, cached = session_cost(rec.steps, SONNET, None, "s")
    assert cached == 3000 and rec.input_tokens == 5000
    assert cost == pytest.approx((1000 * 3.0 + 3000 * 0.30 + 1000 * 3.75 + 100 * 15.0) / 1e6)


def test_searches_group_loads_and_the_answer_are_read_from_the_responses() -> None:
    rec = SessionRecord()
    rec.add_response(ResponseReceived(text="ignored: no request yet"))
    assert rec.steps == [] and rec.answer == ""
    rec.add_request(RequestSent(prefix_hash="p"))
    calls = ({"name": "ToolSearch"}, {"name": "ToolSearch"}, {"name": "load_tools"}, {"name": "getWeather"})
    rec.add_response(ResponseReceived(tool_calls=calls))
    rec.add_request(RequestSent(prefix_hash="p"))
    rec.add_response(ResponseReceived(text="It is sunny."))
    assert (rec.searches, rec.group_loads, rec.answer) == (2, 1, "It is sunny.")


def settings(seed: int = 7) -> Settings:
    mix = Mix(4, seed=seed)
    return Settings(arms=("dispatch",), mix=mix, agent="simulated", price="p", tasks_digest="d", target="t")


def result(index: int, tail: Request | None = None) -> SessionResult:
    values = dict.fromkeys(("steps", "searches", "group_loads", "input_tokens", "cached_tokens", "output_tokens"), 1)
    return SessionResult(
        "dispatch",
        index,
        "t",
        True,
        **values,
        cost=0.5,
        calls=1,
        invalid_calls=0,
        stop_reason="stop",
        tail=tail,
        seed=7,
        done=1,
        asked=1,
        cost_no_cache=0.9,
    )


def test_results_survive_a_stop_with_their_tail_for_the_next_session(tmp_path: Path) -> None:
    tail = Request("p", 1000, (5, 6), ("a", "b"), output_tokens=3)
    first = ResultsFile(tmp_path, settings(), fresh=False)
    first.append(result(0))
    first.append(result(1, tail))
    with (tmp_path / "sessions.jsonl").open("a") as fh:
        fh.write('{"arm": "dispatch", "index": 2, "ta')  # the line being written when it stopped
    again = ResultsFile(tmp_path, settings(), fresh=False)
    assert [r.index for r in again.results("dispatch", 7)] == [0, 1]
    assert again.results("dispatch", 7)[1] == result(1, tail)
    assert again.results("inject", 7) == [] and again.results("dispatch", 8) == []
    assert json.loads((tmp_path / "eval.json").read_text())["mix"]["seed"] == 7


def test_another_evaluations_folder_is_refused_and_fresh_starts_over(tmp_path: Path) -> None:
    ResultsFile(tmp_path, settings(), fresh=False).append(result(0))
    (tmp_path / "dispatch-priors.priors.sqlite3").write_text("learned")
    with pytest.raises(EvalError, match=r"other settings \(mix differ\); run with --fresh"):
        ResultsFile(tmp_path, settings(seed=8), fresh=False)
    (tmp_path / "eval.json").write_text("{not json")
    with pytest.raises(EvalError, match="--fresh"):  # a manifest it cannot read proves nothing
        ResultsFile(tmp_path, settings(), fresh=False)
    fresh = ResultsFile(tmp_path, settings(seed=8), fresh=True)
    assert fresh.results("dispatch", 8) == [] and not (tmp_path / "sessions.jsonl").exists()
    assert not (tmp_path / "dispatch-priors.priors.sqlite3").exists()  # what the arms learned goes too
