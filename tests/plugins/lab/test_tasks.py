"""Task files and the session stream: every line that is not a task is an error naming
its file and line, ids are unique, and the stream every arm runs is the same for the
same mix and seed, drawn from ``--pool`` units (tools, workflows or tasks) with the Zipf
weights ``--zipf`` gives, each unit coming back in a fresh wording while the file has one."""

from __future__ import annotations

import collections
import json
import os
from pathlib import Path

import attrs
import pytest

from greenroom_lab.eval.tasks import MAX_TASK_BYTES, Mix, Task, TaskFileError, draw_stream, load_tasks


def tasks(n: int) -> list[Task]:
    return [Task(query=f"query {i}", gold=("tool",), id=f"t{i}") for i in range(n)]


@pytest.mark.parametrize(
    ("lines", "said"),
    [
        (['["a list"]'], "tasks.jsonl:1: expected a JSON object, got list"),
        (['{"query": "x", "gold": ["a"], "id": "same"}', '{"query": "y", "gold": ["b"], "id": "same"}'], ":2: id 'sa"),
        (['{"query": "x", "gold": "a"}'], "tasks.jsonl:1: gold: expected a non-empty list"),
        (['{"query": "x", "gold": ["a", ""]}'], "tasks.jsonl:1: gold"),
        (['{"query": "x", "gold": ["a"], "check": 3}'], "tasks.jsonl:1: check: expected 'module:function', got 3"),
        (['{"query": "x", "gold": ["a"]}', "x" * (MAX_TASK_BYTES + 1)], "tasks.jsonl:2: the line is longer than"),
    ],
)
def test_lines_that_are_not_tasks_are_named(tmp_path: Path, lines: list[str], said: str) -> None:
    path = tmp_path / "tasks.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(TaskFileError, match=said.replace("[", r"\[")):
        load_tasks(path)


def test_what_a_task_file_holds(tmp_path: Path) -> None:
    path = tmp_path / "tasks.jsonl"
    rows = [
        {"query": "Weather?", "gold": ["w", "w"], "extra": {"kept": "aside"}},
        {"query": "Mail", "gold": ["m"], "id": 7, "check": "checks:mail"},
    ]
    path.write_text("\n\n".join(json.dumps(r) for r in rows) + "\n")
    first, second = load_tasks(path)
    assert (first.id, first.gold, first.check, first.where) == ("line-1", ("w",), None, f"{path}:1")
    assert (second.id, second.check, second.where) == ("7", "checks:mail", f"{path}:3")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes")
def test_a_named_pipe_is_refused_not_waited_on(tmp_path: Path) -> None:
    pipe = tmp_path / "tasks.jsonl"
    os.mkfifo(pipe)
    with pytest.raises(TaskFileError, match="cannot read the task file"):
        load_tasks(pipe)


def session_stream(tasks: list[Task], mix: Mix) -> list[Task]:
    """The verbatim stream, one request a session: each session's task."""
    sessions = draw_stream(tasks, attrs.evolve(mix, stream="verbatim", requests=1)).sessions
    assert all(len(s) == 1 for s in sessions)
    return [s[0] for s in sessions]


def test_the_stream_is_the_same_for_the_same_mix_and_differs_by_seed() -> None:
    pool = tasks(30)
    mix = Mix(sessions=200, pool=10, zipf=1.1, seed=3)
    first = session_stream(pool, mix)
    assert first == session_stream(list(pool), mix) and len(first) == 200
    assert first != session_stream(pool, Mix(sessions=200, pool=10, zipf=1.1, seed=4))
    assert draw_stream(pool, mix, seed=4) == draw_stream(pool, attrs.evolve(mix, seed=4))


def test_sessions_draw_from_pool_tasks_the_most_common_first() -> None:
    stream = session_stream(tasks(30), Mix(sessions=2000, pool=5, zipf=1.5, seed=1))
    counts = collections.Counter(t.id for t in stream).most_common()
    assert len(counts) == 5  # only the pool's tasks
    assert counts[0][1] > 3 * counts[-1][1]  # Zipf: the first task far more common than the fifth


def test_zipf_zero_draws_every_task_about_as_often_and_a_pool_larger_than_the_file_takes_all() -> None:
    stream = session_stream(tasks(4), Mix(sessions=4000, pool=40, zipf=0.0, seed=1))
    counts = collections.Counter(t.id for t in stream)
    assert set(counts) == {"t0", "t1", "t2", "t3"}
    assert max(counts.values()) < 1.2 * min(counts.values())


def test_a_huge_exponent_never_overflows() -> None:
    stream = session_stream(tasks(50), Mix(sessions=20, pool=50, zipf=1e6, seed=2))
    assert len({t.id for t in stream}) == 1  # all weight on the first task, no OverflowError


def worded(tool: str, n: int, *others: str) -> list[Task]:
    return [Task(query=f"{tool} wording {i}", gold=(tool, *others), id=f"{tool}-{i}") for i in range(n)]


def test_a_tool_that_comes_back_comes_in_a_fresh_wording_until_its_wordings_are_used_up() -> None:
    file = [*worded("weather", 5), *worded("mail", 3, "weather"), *worded("taxi", 1)]
    stream = draw_stream(file, Mix(sessions=4, pool=1, zipf=1.0, seed=2, stream="tools", requests=2))
    requests = [t for session in stream.sessions for t in session]
    assert [len(s) for s in stream.sessions] == [2, 2, 2, 2]
    # a pool of one: every request needs its tool; one with a single wording is not pooled while others have more
    common = set.intersection(*(set(t.gold) for t in requests))
    assert common in ({"weather"}, {"weather", "mail"})
    unit = "mail" if "mail" in common else "weather"
    assert len({t.id for t in requests[:3]}) == 3  # no wording again before its unit's are all used
    wordings = len([t for t in file if unit in t.gold])
    assert stream.wordings == min(8, wordings) and stream.repeated == 8 - stream.wordings
    assert stream.to_json() == {"units": 1, "requests": 8, "wordings": stream.wordings, "repeated": stream.repeated}


def test_a_workflow_is_its_set_of_gold_tools_and_verbatim_repeats_the_task() -> None:
    file = [
        Task("book then mail", ("book", "mail"), "a"),
        Task("mail after booking", ("mail", "book"), "b"),
        Task("only mail", ("mail",), "c"),
    ]
    flows = draw_stream(file, Mix(sessions=20, pool=1, zipf=1.0, seed=1, stream="workflows", requests=1))
    assert {s[0].id for s in flows.sessions} == {"a", "b"}  # one workflow in two wordings
    assert (flows.units, flows.wordings, flows.repeated) == (1, 2, 18)
    verbatim = draw_stream(file, Mix(sessions=20, pool=1, zipf=1.0, seed=1, stream="verbatim", requests=1))
    assert len({s[0].id for s in verbatim.sessions}) == 1 and verbatim.repeated == 19
