"""A large corpus's first search builds its text index in a second process (a side build)
while this one builds the BM25 table: the same index, the same answers, and any failure of
the child leaves the index built here, never a failed search."""

from __future__ import annotations

import gc
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from scale_testutil import scale_catalog

from greenroom import SearchQuery, ToolDescriptor
from greenroom_ranking import RankingConfig, RankingEngine
from greenroom_ranking.cache import forget
from greenroom_ranking.corpus import CorpusText
from greenroom_ranking.offload import side

SIZE = 3_000
QUERIES = ["send an email to my team", "+weather forecast city", "book a flight to paris", "refund invoice"]


@pytest.fixture
def two_cpus(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    """A CPU counts as spare whatever else runs on the machine (the suite itself, say);
    and whatever a side build leaves in the temporary folder is seen: nothing, after."""
    monkeypatch.setattr(side, "spare_cpu", lambda: True)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    yield
    gc.collect()  # a side build dropped unused takes its folder with it
    assert not list(tmp_path.glob("greenroom-side-*")), "a side build's answers were left behind"


def engine(min_tools: int, *, cache: bool = False) -> RankingEngine:
    return RankingEngine(RankingConfig(parallel_build_min_tools=min_tools, index_cache=cache), shared=False)


def answers(e: RankingEngine, tools: tuple[ToolDescriptor, ...]) -> list[list[tuple[str, float]]]:
    return [[(s.name, s.score) for s in e.search(SearchQuery.parse(t, max_results=10), tools)] for t in QUERIES]


def part_arrays(e: RankingEngine, tools: tuple[ToolDescriptor, ...]) -> dict[str, np.ndarray]:
    """The text index's and the BM25 table's arrays, as they would be stored."""
    corpus = e.cache.view(tools).corpus
    return {f"{name}/{k}": v for name in ("text", "bm25") for k, v in e.cache.part(corpus, name).to_arrays().items()}


def test_the_side_build_makes_the_indexes_this_process_makes(two_cpus: None) -> None:
    tools = scale_catalog(SIZE)
    aside, here = engine(1), engine(0)
    assert answers(aside, tools) == answers(here, tools)
    # the text index made aside, and the BM25 table's last quarter (taken in here)
    assert aside.cache.side_builds == {"text": 1, "bm25": 1} and here.cache.side_builds == {}
    assert aside.cache.builds == here.cache.builds == {"text": 1, "bm25": 1}
    got, expected = part_arrays(aside, tools), part_arrays(here, tools)
    assert got.keys() == expected.keys()
    for name, array in expected.items():
        assert got[name].dtype == array.dtype and np.array_equal(got[name], array), name


def answering(answer: str) -> str:
    """A child that answers every job with ``answer`` (Python source), as the real one
    answers: a file for each in the folder it is given, and the job's number printed."""
    return (
        "import pickle, sys, numpy; from pathlib import Path\n"
        "for i, job in enumerate(pickle.load(sys.stdin.buffer)):\n"
        f"    (Path(sys.argv[1]) / f'{{i}}.pickle').write_bytes(pickle.dumps({answer}))\n"
        "    print(i, flush=True)\n"
    )


@pytest.mark.parametrize(
    "child",
    [
        pytest.param("import sys; sys.exit(3)", id="exits-with-an-error"),
        pytest.param("import sys; sys.stdout.write('not a number')", id="says-what-is-no-notice"),
        pytest.param("print(0, flush=True)", id="says-an-answer-is-ready-that-is-not-there"),
        pytest.param(answering("({'name.size': numpy.zeros(3)}, False)"), id="answers-arrays-that-do-not-fit"),
        pytest.param(answering("[1, 2]"), id="answers-no-arrays"),
    ],
)
def test_a_child_that_fails_leaves_the_index_built_here(
    two_cpus: None, monkeypatch: pytest.MonkeyPatch, child: str
) -> None:
    tools = scale_catalog(SIZE)
    expected = answers(engine(0), tools)
    monkeypatch.setattr(side, "CHILD", (sys.executable, "-c", child))
    e = engine(1)
    assert answers(e, tools) == expected
    assert e.cache.side_builds == {} and e.cache.builds == {"text": 1, "bm25": 1}


def test_a_child_that_takes_too_long_is_stopped_and_the_index_built_here(
    two_cpus: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    tools = scale_catalog(SIZE)
    expected = answers(engine(0), tools)
    # the child never answers: waiting for it is given up at once, and it is stopped
    monkeypatch.setattr(side, "CHILD", (sys.executable, "-c", "import threading; threading.Event().wait()"))
    monkeypatch.setattr(side, "SIDE_TIMEOUT", 0.0)
    started: list[side.SideBuild] = []
    real_start = side.SideBuild.start

    def start(jobs: list[side.Job], command: object = None) -> side.SideBuild | None:
        got = real_start(jobs)
        if got is not None:
            started.append(got)
        return got

    monkeypatch.setattr(side.SideBuild, "start", staticmethod(start))
    e = engine(1)
    assert answers(e, tools) == expected
    assert e.cache.side_builds == {} and len(started) == 1
    assert started[0]._proc.wait(timeout=30) != 0  # killed, not left running


def test_a_child_that_stored_what_does_not_fit_is_overwritten_by_the_index_built_here(
    two_cpus: None, monkeypatch: pytest.MonkeyPatch, fresh_index_cache: Path
) -> None:
    tools = scale_catalog(SIZE)
    expected = answers(engine(0), tools)
    forget()
    # for each job, arrays of another corpus, written to the store when it is given one, and said so
    child = (
        "import pickle, sys, numpy; from pathlib import Path; from greenroom_ranking.store import IndexStore\n"
        "for i, (task, inputs, store) in enumerate(pickle.load(sys.stdin.buffer)):\n"
        "    arrays = {'name.size': numpy.zeros(3)}\n"
        "    if store: IndexStore(Path(store[0])).save(store[1], arrays)\n"
        "    (Path(sys.argv[1]) / f'{i}.pickle').write_bytes(pickle.dumps((arrays, bool(store))))\n"
        "    print(i, flush=True)\n"
    )
    monkeypatch.setattr(side, "CHILD", (sys.executable, "-c", child))
    first = engine(1, cache=True)
    assert answers(first, tools) == expected and first.cache.side_builds == {}
    forget()
    second = engine(0, cache=True)  # reads what the first one stored: its own build, not the child's
    assert answers(second, tools) == expected
    assert second.cache.loads == {"text": 1, "bm25": 1} and second.cache.builds == {}


def test_no_side_build_below_the_threshold_without_a_spare_cpu_or_when_turned_off(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    load = [0.0]
    monkeypatch.setattr(side.os, "getloadavg", lambda: (load[0], 0.0, 0.0))
    monkeypatch.setattr(side, "usable_cpus", lambda: 2)
    assert side.worth_a_side_build(20_000, 20_000)
    assert not side.worth_a_side_build(19_999, 20_000)
    assert not side.worth_a_side_build(100_000, 0)
    load[0] = 1.2  # this process, busy, and a little more: the other CPU is spare
    assert side.worth_a_side_build(100_000, 20_000)
    load[0] = 1.6  # something else takes most of it
    assert not side.worth_a_side_build(100_000, 20_000)
    load[0] = 0.0
    monkeypatch.setattr(side, "usable_cpus", lambda: 1)
    assert not side.worth_a_side_build(100_000, 20_000)
    tools = scale_catalog(SIZE)
    e = engine(1)
    answers(e, tools)
    assert e.cache.side_builds == {} and e.cache.builds == {"text": 1, "bm25": 1}


def test_the_child_stores_its_index_and_the_next_process_reads_it(two_cpus: None, fresh_index_cache: Path) -> None:
    tools = scale_catalog(SIZE)
    first = engine(1, cache=True)
    expected = answers(first, tools)
    assert first.cache.side_builds == {"text": 1, "bm25": 1}
    assert len(list((fresh_index_cache / "ranking-index").glob("*.npz"))) == 2  # text (the child's), bm25
    forget()  # a new process: nothing shared in memory, the store on disk
    second = engine(1, cache=True)
    assert answers(second, tools) == expected
    assert second.cache.side_builds == {} and second.cache.builds == {}
    assert second.cache.loads == {"text": 1, "bm25": 1}


def test_the_child_builds_what_corpus_text_builds() -> None:
    tools = scale_catalog(500)
    names = [t.name for t in tools]
    expected = CorpusText(names, *side_free_indexes(names, [t.description for t in tools])).to_arrays()
    from greenroom_ranking.offload.child import text_arrays as child_arrays

    got = child_arrays(names, [t.description for t in tools])
    assert got.keys() == expected.keys()
    assert all(np.array_equal(got[k], expected[k]) for k in expected)


def side_free_indexes(names: list[str], descriptions: list[str]) -> tuple[object, object]:
    """The two indexes as ``CorpusText`` was built before side builds: one per text field."""
    from greenroom_ranking.substrings import SubstringIndex

    return SubstringIndex.build(n.lower() for n in names), SubstringIndex.build(d.lower() for d in descriptions)


def test_no_side_build_while_another_process_builds_the_same_indexes(
    two_cpus: None, fresh_index_cache: Path, tmp_path: Path
) -> None:
    """A process that finds another one building the corpus's indexes waits for them and
    reads them, as without side builds, rather than building them again in two more."""
    tools = scale_catalog(SIZE)
    expected = answers(engine(0), tools)
    forget()
    e = engine(1, cache=True)
    corpus = e.cache.view(tools).corpus
    key = e.cache._key(corpus, "bm25")
    holder = tmp_path / "holder.py"
    holder.write_text(
        "import sys, time\n"
        "from pathlib import Path\n"
        "from greenroom_ranking.store import IndexStore\n"
        "store = IndexStore(Path(sys.argv[1]))\n"
        "with store.building(sys.argv[2]):\n"
        "    print('held', flush=True)\n"
        "    sys.stdin.readline()\n"  # held until told to let go
    )
    child = subprocess.Popen(
        [sys.executable, str(holder), str(e.cache.store.path), key],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "held"
        assert e.cache.store.busy(key)
        e.cache.prebuild(corpus, ("keyword", "bm25"))
        assert corpus.side == {}  # nothing started beside it
    finally:
        assert child.stdin is not None
        child.stdin.write("\n")
        child.stdin.close()
        child.wait(timeout=30)
    assert not e.cache.store.busy(key)
    assert answers(e, tools) == expected and e.cache.side_builds == {}
