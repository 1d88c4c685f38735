"""The report an evaluation returns and prints: ratios against the right baseline, the
learning curve, errors told apart (a model's, a checker's), the JSON shape ``--json``
prints, and the table and its notes as text (never markup), at 80 columns."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest
from rich.console import Console

from greenroom_lab.costing import Request
from greenroom_lab.eval.report import SHOWN_ERRORS, WINDOWS, curve, prefix_changes, print_report
from greenroom_lab.eval.report import summarize as report_of
from greenroom_lab.eval.results import SessionResult

ARM_KEYS = {
    "name",
    "strategy",
    "priors",
    "sessions",
    "success",
    "searches_per_session",
    "steps_per_session",
    "input_tokens_per_session",
    "cost_per_session",
    "cost_no_cache_per_session",
    "cost_ratio",
    "tokens_ratio",
    "cache_read_share",
    "invalid_calls_per_session",
    "prefix_changes",
    "errors",
    "check_errors",
    "over_window",
    "largest_refused",
    "error_messages",
    "curve",
    "spread",
    "per_seed",
}


def result(arm: str, index: int, **values: Any) -> SessionResult:
    fields: dict[str, Any] = {
        "task": "t",
        "success": True,
        "steps": 2,
        "searches": 1,
        "group_loads": 0,
        "input_tokens": 1000,
        "cached_tokens": 0,
        "output_tokens": 10,
        "cost": 0.01,
        "calls": 1,
        "invalid_calls": 0,
        "stop_reason": "stop",
    }
    merged = {**fields, **values}
    merged.setdefault("done", int(merged["success"]))
    return SessionResult(arm=arm, index=index, **merged)


def summarize(by_arm: dict[str, list[SessionResult]]) -> dict[str, Any]:
    """The report of one seed's results."""
    return report_of({7: by_arm})


def tail(prefix: str) -> Request:
    return Request(prefix_hash=prefix, prefix_tokens=100, message_tokens=(5,), message_ids=("m",))


def test_ratios_are_against_all_eager_when_it_ran() -> None:
    report = summarize(
        {
            "dispatch": [result("dispatch", i, cost=0.01, input_tokens=500) for i in range(4)],
            "all-eager": [result("all-eager", i, cost=0.04, input_tokens=5000) for i in range(4)],
        }
    )
    assert report["baseline"] == "all-eager"
    arms = {a["name"]: a for a in report["arms"]}
    assert arms["dispatch"]["cost_ratio"] == pytest.approx(0.25)
    assert arms["dispatch"]["tokens_ratio"] == pytest.approx(0.1)
    assert arms["all-eager"]["cost_ratio"] == 1.0
    assert [a["name"] for a in report["arms"]] == ["dispatch", "all-eager"]  # in the order the arms ran
    assert set(arms["dispatch"]) == ARM_KEYS
    json.dumps(report)  # what --json prints


def test_without_all_eager_the_first_arm_is_the_baseline_and_a_free_one_gives_no_ratio() -> None:
    report = summarize(
        {
            "dispatch": [result("dispatch", 0, cost=0.0, input_tokens=0)],
            "inject": [result("inject", 0, cost=0.02)],
        }
    )
    assert report["baseline"] == "dispatch"
    inject = report["arms"][1]
    assert inject["cost_ratio"] is None and inject["tokens_ratio"] is None  # no division by zero, no made-up ratio


def test_figures_are_means_per_session_and_the_cache_share_is_of_all_input() -> None:
    results = [
        result("dispatch", 0, success=True, searches=2, steps=3, input_tokens=1000, cached_tokens=500),
        result(
            "dispatch", 1, success=False, searches=0, steps=1, input_tokens=3000, cached_tokens=500, invalid_calls=2
        ),
    ]
    (arm,) = summarize({"dispatch": results})["arms"]
    assert (arm["success"], arm["searches_per_session"], arm["steps_per_session"]) == (0.5, 1.0, 2.0)
    assert arm["input_tokens_per_session"] == 2000 and arm["invalid_calls_per_session"] == 1
    assert arm["cache_read_share"] == pytest.approx(0.25)
    assert (arm["strategy"], arm["priors"], arm["sessions"]) == ("dispatch", False, 2)


def test_an_arm_that_ran_no_session_reports_zeros() -> None:
    (arm,) = summarize({"dispatch+priors": []})["arms"]
    assert arm["sessions"] == 0 and arm["success"] == 0.0 and arm["cache_read_share"] == 0.0
    assert arm["curve"] == [] and arm["priors"] is True


def test_errors_of_the_model_and_of_checkers_are_told_apart_and_named_once_each() -> None:
    model = "the model failed: MissingApiKeyError: openai: no API key"
    results = [
        result("dispatch", 0, stop_reason="error", success=False, error=model),
        result("dispatch", 1, stop_reason="error", success=False, error=model),
        result("dispatch", 2, stop_reason="error", success=False),  # an older results file: no message
        result("dispatch", 3, success=False, error="check m:f raised ValueError: no"),
        *[result("dispatch", 4 + i, success=False, error=f"check m:f{i} raised") for i in range(SHOWN_ERRORS)],
        result("dispatch", 9),
    ]
    (arm,) = summarize({"dispatch": results})["arms"]
    assert arm["errors"] == 3 + 1 + SHOWN_ERRORS
    assert arm["check_errors"] == 1 + SHOWN_ERRORS
    assert arm["error_messages"] == [model, "check m:f raised ValueError: no", "check m:f0 raised"][:SHOWN_ERRORS]


def test_the_curve_has_at_most_ten_windows_covering_every_session() -> None:
    results = [result("inject", i, searches=3 if i < 50 else 1) for i in range(95)]
    points = curve(results)
    assert len(points) <= WINDOWS
    assert [p["sessions"] for p in points] == sorted(p["sessions"] for p in points)
    assert points[-1]["sessions"] == 95
    assert points[0]["searches"] == 3 and points[-1]["searches"] == 1  # learning shows as it happened
    assert [p["sessions"] for p in curve(results[:3])] == [1, 2, 3]  # fewer sessions than windows
    assert curve([]) == []


def test_prefix_changes_count_the_sessions_that_ended_on_another_prefix() -> None:
    tails = ["a", "a", "b", "b", "a", None, "a"]
    results = [result("inject", i, tail=tail(t) if t else None) for i, t in enumerate(tails)]
    assert prefix_changes(results) == 2  # a->b, b->a; a session with no request changes nothing


def printed(report: dict[str, Any]) -> str:
    out = io.StringIO()
    print_report(Console(file=out, width=80), report, "tools.jsonl · 3 sessions · agent simulated")
    return out.getvalue()


def test_the_table_fits_80_columns_and_says_errors_and_retries_under_it() -> None:
    results = [
        result("dispatch+priors", 0, stop_reason="error", success=False, error="the model failed: [b]boom[/b] :x:"),
        result("dispatch+priors", 1, success=False, error="check my_checks:flight raised KeyError"),
        result("dispatch+priors", 2, cost=0.123456),
    ]
    report = summarize({"dispatch+priors": results})
    report["arms"][0]["retries"] = 4
    text = printed(report)
    assert max(map(len, text.splitlines())) <= 80
    assert "dispatch+priors" in text and "33%" in text and "x base" in text
    said = " ".join(text.split())
    assert "dispatch+priors: 2 sessions ended in an error (1 of them a failed task check)" in said
    assert "the model failed: [b]boom[/b] :x:" in said  # a message is text, not markup or an emoji
    assert "check my_checks:flight raised KeyError" in said
    assert "dispatch+priors: 4 provider calls retried" in said


def test_an_arm_without_errors_or_retries_adds_no_note() -> None:
    text = printed(summarize({"all-eager": [result("all-eager", 0)]}))
    assert "error" not in text and "retried" not in text
    assert "1.000" in text  # its own baseline


def test_with_several_seeds_each_figure_is_their_mean_with_its_spread() -> None:
    report = report_of(
        {
            7: {
                "all-eager": [result("all-eager", 0, cost=0.04, input_tokens=4000)],
                "dispatch": [result("dispatch", 0, cost=0.01, input_tokens=1000, searches=2)],
            },
            8: {
                "all-eager": [result("all-eager", 0, cost=0.04, input_tokens=4000)],
                "dispatch": [result("dispatch", 0, cost=0.02, input_tokens=3000, searches=4, success=False)],
            },
        }
    )
    assert report["seeds"] == [7, 8]
    dispatch = report["arms"][1]
    assert dispatch["sessions"] == 2 and dispatch["success"] == 0.5
    assert dispatch["searches_per_session"] == 3 and dispatch["spread"]["searches_per_session"] == pytest.approx(2**0.5)
    assert dispatch["cost_ratio"] == pytest.approx(0.375)  # the mean of each seed's ratio: 0.25 and 0.5
    assert dispatch["spread"]["cost_ratio"] == pytest.approx(0.25 / 2**0.5)
    assert dispatch["spread"]["success"] == pytest.approx(2**0.5 / 2)
    assert report["arms"][0]["spread"]["cost_ratio"] == 0.0
    assert [(f["seed"], f["searches_per_session"]) for f in dispatch["per_seed"]] == [(7, 2), (8, 4)]
    text = printed(report)
    assert max(map(len, text.splitlines())) <= 80
    assert "±1.41" in text and "±71" in text and "± over 2 seeds" in " ".join(text.split())


def test_a_baseline_past_the_context_window_gives_no_ratio_and_is_said() -> None:
    refused = "request of 300,000 tokens at step 1 is past the context window of 200,000 (--context-window)"
    report = summarize(
        {
            "all-eager": [
                result("all-eager", 0, success=False, stop_reason="error", error=refused, over_window=300_000)
            ],
            "dispatch": [result("dispatch", 0, cost=0.01, cost_no_cache=0.05)],
        }
    )
    report["arms"][0]["context_window"] = 200_000
    eager, dispatch = report["arms"]
    assert eager["over_window"] == 1 and eager["errors"] == 1 and eager["largest_refused"] == 300_000
    assert dispatch["cost_ratio"] is None and dispatch["tokens_ratio"] is None  # against what was never sent
    assert dispatch["cost_no_cache_per_session"] == 0.05
    said = " ".join(printed(report).split())
    assert "all-eager: 1 sessions ended at a request past the context window of 200,000 tokens" in said
    assert "(300,000 at most; not sent)" in said and "ended in an error" not in said
    assert "0.0100 0.0500 -" in said  # the cost with the cache, without it, and no ratio
