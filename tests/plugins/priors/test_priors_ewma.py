"""The EWMA fold and the priors document: known numbers for known session sequences."""

from __future__ import annotations

import math

import pytest

from greenroom_priors import (
    FORMAT,
    DocumentError,
    Observation,
    check_document,
    fold,
    fold_document,
    smoothing,
)


def test_smoothing_is_a_running_mean_then_floors_at_a_tenth() -> None:
    assert [smoothing(n) for n in (0, 1, 2, 3, 4)] == [1.0, 0.5, 1 / 3, 0.25, 0.2]
    assert smoothing(9) == pytest.approx(0.1)
    assert smoothing(10) == 0.1  # 1/11 < 0.1: the floor takes over
    assert smoothing(1000) == 0.1
    assert smoothing(9, floor=0.2) == 0.2
    with pytest.raises(ValueError):
        smoothing(-1)


def test_known_sequence_by_hand() -> None:
    p: dict[str, float] = {}
    p = fold(p, {"a": 0.5}, 0)  # l = 1: the first session is taken as is
    assert p == {"a": 0.5}
    p = fold(p, {"a": 1.0, "b": 0.25}, 1)  # l = 1/2; b is new: starts at its share
    assert p == {"a": 0.75, "b": 0.25}
    p = fold(p, {"b": 1.0}, 2)  # l = 1/3; a unused: keeps its value
    assert p["a"] == 0.75
    assert p["b"] == pytest.approx(2 / 3 * 0.25 + 1 / 3 * 1.0)  # 0.5
    p = fold(p, {"a": 0.0}, 3)  # l = 1/4
    assert p["a"] == pytest.approx(0.75 * 0.75)  # 0.5625
    assert p["b"] == pytest.approx(0.5)


def test_first_ten_sessions_average_then_newest_weighs_a_tenth() -> None:
    shares = [0.1, 0.3, 0.5, 0.7, 0.9, 1.0, 0.0, 0.2, 0.4, 0.6, 1.0, 0.0]
    p: dict[str, float] = {}
    for n, share in enumerate(shares[:10]):
        p = fold(p, {"t": share}, n)
    assert p["t"] == pytest.approx(sum(shares[:10]) / 10)  # 0.47
    p = fold(p, {"t": shares[10]}, 10)
    assert p["t"] == pytest.approx(0.9 * 0.47 + 0.1 * 1.0)  # 0.523
    p = fold(p, {"t": shares[11]}, 11)
    assert p["t"] == pytest.approx(0.9 * 0.523)  # 0.4707


def test_a_tool_first_seen_late_starts_at_its_share() -> None:
    p = fold({"old": 0.9}, {"new": 0.2}, sessions=50)
    assert p == {"old": 0.9, "new": 0.2}


def test_absent_tools_decay_only_when_named() -> None:
    p = fold({"a": 0.8, "b": 0.4}, {"b": 0.4}, sessions=1, absent=["a", "b", "unknown"])
    assert p == {"a": pytest.approx(0.4), "b": pytest.approx(0.4)}


def test_shares_are_clamped_and_nan_rejected() -> None:
    assert fold({}, {"a": 1.5}, 0) == {"a": 1.0}
    with pytest.raises(ValueError):
        fold({}, {"a": math.nan}, 0)


def test_fold_document_counts_calls_sessions_and_last_use() -> None:
    doc = fold_document(None, Observation({"a": 0.5}, {"a": 3}), now="T1")
    assert doc == {
        "format": FORMAT,
        "sessions": 1,
        "updated": "T1",
        "tools": {"a": {"p": 0.5, "calls": 3, "last_used": "T1"}},
        "steps": 0.0,
        "sets": [{"tools": ["a"], "w": 1.0, "n": 1}],
        "failed": [],
    }
    doc2 = fold_document(doc, Observation({"b": 1.0}, {"b": 1}), now="T2")
    assert doc2["sessions"] == 2
    assert doc2["tools"]["a"] == {"p": 0.5, "calls": 3, "last_used": "T1"}  # untouched
    assert doc2["tools"]["b"] == {"p": 1.0, "calls": 1, "last_used": "T2"}
    assert doc["tools"]["a"]["calls"] == 3 and "b" not in doc["tools"]  # input not mutated


def test_fold_document_decays_available_unused_tools() -> None:
    doc = fold_document(None, Observation({"a": 1.0, "b": 1.0}), now="T1")
    doc = fold_document(doc, Observation({"a": 1.0}, available=frozenset({"a", "b"})), now="T2")
    assert doc["tools"]["b"]["p"] == pytest.approx(0.5)  # l = 1/2, share 0
    assert doc["tools"]["b"]["last_used"] == "T1"
    doc = fold_document(doc, Observation({"a": 1.0}, available=frozenset({"a"})), now="T3")
    assert doc["tools"]["b"]["p"] == pytest.approx(0.5)  # not available: kept


@pytest.mark.parametrize(
    "bad, words",
    [
        ([], "expected a priors document"),
        ({"format": "other/1", "sessions": 0, "tools": {}}, "not a greenroom priors document"),
        ({"format": FORMAT, "sessions": -1, "tools": {}}, "'sessions'"),
        ({"format": FORMAT, "sessions": 1, "tools": []}, "'tools'"),
        ({"format": FORMAT, "sessions": 1, "tools": {"a": {"p": 2}}}, "tools.a.p"),
        ({"format": FORMAT, "sessions": 1, "tools": {"a": {"p": 0.1, "calls": "x"}}}, "tools.a.calls"),
        ({"format": FORMAT, "sessions": 1, "tools": {}, "sets": [{"tools": ["a"], "w": 3}]}, r"sets\[0\].w"),
        ({"format": FORMAT, "sessions": 1, "tools": {}, "failed": [{"query": 1}]}, r"failed\[0\]"),
        ({"format": FORMAT, "sessions": 1, "tools": {}, "steps": -1}, "'steps'"),
    ],
)
def test_check_document_names_the_problem(bad: object, words: str) -> None:
    with pytest.raises(DocumentError, match="^where: .*" + words.replace("(", r"\(")):
        check_document(bad, "where")


def test_fold_document_refuses_a_foreign_document_instead_of_overwriting() -> None:
    with pytest.raises(DocumentError, match="not a greenroom priors document"):
        fold_document({"something": "else"}, Observation({"a": 1.0}), now="T")


def test_a_version_1_document_still_loads_and_is_written_back_as_version_2() -> None:
    old = {"format": "greenroom.priors/1", "sessions": 3, "updated": "T0", "tools": {"a": {"p": 0.5, "calls": 4}}}
    doc = check_document(old, "where")
    assert (doc["format"], doc["sets"], doc["failed"], doc["steps"]) == (FORMAT, [], [], 0.0)
    assert doc["tools"]["a"]["p"] == 0.5
    folded = fold_document(old, Observation({"a": 1.0}, {"a": 1}, steps=4), now="T1")
    assert folded["format"] == FORMAT == "greenroom.priors/2" and folded["sessions"] == 4
    assert folded["sets"] == [{"tools": ["a"], "w": pytest.approx(0.25), "n": 1}]  # l = 1/4
    assert folded["steps"] == 4.0


def test_sets_say_what_sessions_use_together_and_fold_like_p() -> None:
    doc = None
    for called in ({"a", "b"}, {"a", "b"}, {"c"}, {"a", "b"}):
        doc = fold_document(doc, Observation({n: 1.0 for n in called}, steps=2), now="T")
    assert doc is not None
    sets = {tuple(e["tools"]): (e["w"], e["n"]) for e in doc["sets"]}
    # the plain mean of 4 sessions: {a, b} in 3, {c} in 1
    assert sets == {("a", "b"): (pytest.approx(0.75), 3), ("c",): (pytest.approx(0.25), 1)}
    assert doc["steps"] == pytest.approx(2.0)


def test_the_sets_kept_are_bounded_and_the_smallest_shares_go_first() -> None:
    from greenroom_priors.together import MAX_SET_TOOLS, MAX_SETS

    doc = None
    for i in range(MAX_SETS + 10):
        doc = fold_document(doc, Observation({f"t{i}": 1.0}), now="T")
    doc = fold_document(doc, Observation({f"x{i}": 1.0 for i in range(MAX_SET_TOOLS + 1)}), now="T")
    assert doc is not None and len(doc["sets"]) == MAX_SETS
    kept = {e["tools"][0] for e in doc["sets"]}
    assert f"t{MAX_SETS + 9}" in kept and "t0" not in kept  # the newest stay, the oldest went
    assert all(len(e["tools"]) <= MAX_SET_TOOLS for e in doc["sets"])


def test_failed_searches_are_counted_by_query_and_bounded() -> None:
    from greenroom_priors.together import MAX_FAILED

    doc = fold_document(None, Observation({}, failed=[("Refund  an ORDER", ("x",))]), now="T1")
    doc = fold_document(doc, Observation({}, failed=[("refund an order", ())]), now="T2")
    assert doc["failed"] == [{"query": "refund an order", "count": 2, "last": "T2", "found": []}]
    many = [(f"query {i}", ()) for i in range(MAX_FAILED + 5)]
    doc = fold_document(doc, Observation({}, failed=many), now="T3")
    assert len(doc["failed"]) == MAX_FAILED
