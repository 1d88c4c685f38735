"""search-ranking's index cache: built once per catalog, shared in the process and on disk.

A second engine (or process) over the same catalog reads the indexes instead of
building them; a changed description is a new catalog; a damaged file is rebuilt;
two processes building at once leave one whole file; a search over a subset of the
catalog is the whole catalog's ranking restricted to it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest

from greenroom import SearchQuery, ToolDescriptor
from greenroom_ranking import RankingConfig, RankingEngine
from greenroom_ranking.cache import forget
from greenroom_ranking.store import IndexStore

WORDS = "weather city email send search issue pull request invoice refund translate text music play".split()


def catalog(n: int = 60, seed: int = 0) -> list[ToolDescriptor]:
    """``n`` tools with names, descriptions and a parameter from a small vocabulary."""
    rng = np.random.default_rng(seed)
    tools = []
    for i in range(n):
        a, b, c, d = (WORDS[int(k)] for k in rng.integers(0, len(WORDS), 4))
        params = {"type": "object", "properties": {f"{c}_id": {"type": "string", "description": f"The {d}"}}}
        tools.append(ToolDescriptor(f"{a}_{b}_{i}", f"{a.title()} the {b} of a {c}", params))
    return tools


def q(text: str, n: int = 10) -> SearchQuery:
    return SearchQuery.parse(text, max_results=n)


QUERIES = ["weather city", "send email", "+music play", "refund invoice text", "pull_request_3", "xyz"]


def answers(engine: RankingEngine, tools: list[ToolDescriptor]) -> list[list[list[object]]]:
    """Each query's results as JSON would carry them (a child process prints them)."""
    return [[[s.name, s.score] for s in engine.search(q(text), tools)] for text in QUERIES]


def index_files(home: Path) -> list[Path]:
    return sorted((home / "ranking-index").glob("*.npz"))


# ----------------------------------------------------------------------------- one process


def test_a_second_engine_in_the_process_shares_the_corpus_and_builds_nothing() -> None:
    tools = catalog()
    first, second = RankingEngine(RankingConfig()), RankingEngine(RankingConfig())
    expected = answers(first, tools)
    assert first.cache.builds == {"text": 1, "bm25": 1}
    # other descriptor objects with the same content are the same catalog
    assert answers(second, [attrs.evolve(t) for t in tools]) == expected
    assert second.cache.builds == {} and second.cache.loads == {} and second.cache.shared == 1


def test_a_new_engine_after_a_restart_reads_the_disk_cache_instead_of_building(fresh_index_cache: Path) -> None:
    tools = catalog()
    expected = answers(RankingEngine(RankingConfig()), tools)
    assert len(index_files(fresh_index_cache)) == 2  # the text index and the bm25 table
    forget()  # as a new process would start: nothing shared in memory
    engine = RankingEngine(RankingConfig())
    assert answers(engine, tools) == expected
    assert engine.cache.builds == {} and engine.cache.loads == {"text": 1, "bm25": 1}


def test_settings_the_index_is_built_with_are_part_of_its_key() -> None:
    tools = catalog()
    RankingEngine(RankingConfig()).prepare(tools)
    forget()
    other = RankingEngine(RankingConfig(bm25_k1=2.0))
    other.prepare(tools)
    assert other.cache.builds == {"bm25": 1} and other.cache.loads == {"text": 1}


def test_a_runs_indexes_are_of_its_catalog_whichever_of_its_tools_are_deferred() -> None:
    tools = catalog()
    # a run's catalog: its search tool (never deferred, never searched), then its tools
    run_catalog = [ToolDescriptor("ToolSearch", "Find tools", deferrable="never"), *tools]
    first = RankingEngine(RankingConfig())
    first.rank(q("weather city"), tools[5:], catalog=run_catalog)  # five tools eager in this run
    assert first.cache.builds == {"text": 1, "bm25": 1}
    forget()  # a new process, whose run defers other tools (one learned eager, one loaded)
    again = RankingEngine(RankingConfig())
    deferred = [t for i, t in enumerate(tools) if i % 7]
    found = again.rank(q("weather city"), deferred, catalog=run_catalog).results
    assert again.cache.builds == {} and again.cache.loads == {"text": 1, "bm25": 1}
    assert found and {s.name for s in found} <= {t.name for t in deferred}
    # the corpus is the catalog's searchable tools: what `greenroom rank index` builds
    assert again.cache.view(deferred).corpus.names == [t.name for t in tools]


def test_index_cache_off_writes_nothing(fresh_index_cache: Path) -> None:
    engine = RankingEngine(RankingConfig(index_cache=False))
    answers(engine, catalog())
    assert engine.cache.builds == {"text": 1, "bm25": 1}
    assert index_files(fresh_index_cache) == []


def test_a_changed_description_is_a_new_catalog_and_is_rebuilt() -> None:
    tools = catalog()
    RankingEngine(RankingConfig()).prepare(tools)
    forget()
    changed = [*tools[:-1], attrs.evolve(tools[-1], description="Convert currencies between countries")]
    engine = RankingEngine(RankingConfig())
    assert [s.name for s in engine.search(q("currencies", 1), changed)] == [tools[-1].name]
    assert engine.cache.builds == {"text": 1, "bm25": 1} and engine.cache.loads == {}


def test_a_changed_schema_rebuilds_bm25_which_reads_it() -> None:
    tools = catalog()
    RankingEngine(RankingConfig()).prepare(tools)
    forget()
    schema = {"type": "object", "properties": {"currency": {"type": "string", "description": "ISO code"}}}
    changed = [*tools[:-1], attrs.evolve(tools[-1], parameters=schema)]
    bm25_only: dict[str, Any] = {"rankers": ("bm25",)}  # (mypy's attrs plugin mistypes the converter)
    engine = RankingEngine(RankingConfig(**bm25_only))
    assert [s.name for s in engine.search(q("currency", 1), changed)] == [tools[-1].name]
    assert engine.cache.builds == {"bm25": 1}


@pytest.mark.parametrize("damage", ["garbage", "truncated", "empty", "inconsistent arrays", "another key"])
def test_a_damaged_cache_file_is_ignored_and_rebuilt(fresh_index_cache: Path, damage: str) -> None:
    tools = catalog()
    expected = answers(RankingEngine(RankingConfig()), tools)
    for path in index_files(fresh_index_cache):
        raw = path.read_bytes()
        if damage == "garbage":
            path.write_bytes(os.urandom(len(raw)))
        elif damage == "truncated":
            path.write_bytes(raw[: len(raw) // 2])
        elif damage == "empty":
            path.write_bytes(b"")
        else:
            with np.load(path) as stored:
                arrays = {k: stored[k] for k in stored.files}
            if damage == "another key":
                arrays["_key"] = np.frombuffer(b"some other catalog", dtype=np.uint8)
            else:  # a readable file whose arrays point out of range
                for k in arrays:
                    if k.endswith(("postings", "indices")):
                        arrays[k] = arrays[k] + 10_000
            with path.open("wb") as fh:
                np.savez(fh, **arrays)
    forget()
    engine = RankingEngine(RankingConfig())
    assert answers(engine, tools) == expected
    assert engine.cache.builds == {"text": 1, "bm25": 1} and engine.cache.loads == {}
    forget()  # the rebuilt files were written back whole
    again = RankingEngine(RankingConfig())
    assert answers(again, tools) == expected and again.cache.loads == {"text": 1, "bm25": 1}


def test_a_state_dir_that_cannot_be_written_costs_a_rebuild_not_a_search(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocked = tmp_path / "not-a-dir"
    blocked.write_text("a file where the state dir should be")
    monkeypatch.setenv("GREENROOM_HOME", str(blocked))
    tools = catalog()
    engine = RankingEngine(RankingConfig())
    assert answers(engine, tools)[0]  # "weather city" finds tools
    assert engine.cache.builds == {"text": 1, "bm25": 1}


def test_the_store_keeps_the_most_recently_used_files(tmp_path: Path) -> None:
    store = IndexStore(tmp_path)
    for i, when in enumerate([100, 500, 200, 400, 300]):  # key-1 used last, key-0 first
        store.save(f"key-{i}", {"x": np.arange(10)})
        os.utime(store.file(f"key-{i}"), (when, when))
    store.prune(keep_files=3)
    assert [i for i in range(5) if store.load(f"key-{i}") is not None] == [1, 3, 4]
    store.prune(keep_files=10, keep_bytes=1)  # over the byte bound: only the newest stays
    assert sum(store.load(f"key-{i}") is not None for i in range(5)) == 1


# ----------------------------------------------------------------------------- processes

CHILD = """
import json, sys
sys.path.insert(0, {tests!r})
from test_index_cache import answers, catalog
from greenroom_ranking import RankingConfig, RankingEngine

engine = RankingEngine(RankingConfig())
found = answers(engine, catalog(400))
print(json.dumps({{"answers": found, "builds": engine.cache.builds, "loads": engine.cache.loads}}))
"""


def run_children(count: int, home: Path) -> list[dict[str, object]]:
    env = {**os.environ, "GREENROOM_HOME": str(home)}
    code = CHILD.format(tests=str(Path(__file__).parent))
    procs = [
        subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        for _ in range(count)
    ]
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=120)
        assert p.returncode == 0, stderr.decode()
        out.append(json.loads(stdout))
    return out


def test_another_process_reads_the_indexes_this_one_built(fresh_index_cache: Path) -> None:
    (first,) = run_children(1, fresh_index_cache)
    (second,) = run_children(1, fresh_index_cache)
    assert first["builds"] == {"text": 1, "bm25": 1} and first["loads"] == {}
    assert second["builds"] == {} and second["loads"] == {"text": 1, "bm25": 1}
    assert second["answers"] == first["answers"]


def test_two_processes_building_at_once_build_once_and_leave_whole_files(fresh_index_cache: Path) -> None:
    results = run_children(2, fresh_index_cache)
    assert results[0]["answers"] == results[1]["answers"]
    for part in ("text", "bm25"):  # the lock makes the later one wait, then read
        assert sum(r["builds"].get(part, 0) for r in results) == 1  # type: ignore[attr-defined]
    assert len(index_files(fresh_index_cache)) == 2
    assert not list((fresh_index_cache / "ranking-index").glob(".tmp-*"))
    forget()
    engine = RankingEngine(RankingConfig())
    assert answers(engine, catalog(400)) == results[0]["answers"]
    assert engine.cache.loads == {"text": 1, "bm25": 1}
