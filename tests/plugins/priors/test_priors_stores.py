"""The ProfileStore contract on every built-in backend, and SQLite's faults: corrupt and
foreign files, damaged documents, a locked database."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from greenroom_priors import KEY, SqliteStore, open_store
from greenroom_priors.store import ProfileStore, StoreError
from greenroom_priors.stores import builtin_factories
from greenroom_priors.stores.sqlite import APPLICATION_ID


@pytest.fixture
def store(store_url: str) -> Iterator[ProfileStore]:
    s = open_store(store_url, builtin_factories())
    yield s
    s.close()


def bump(current: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return {"n": (current or {"n": 0})["n"] + 1}


def test_contract_read_update_delete_agents(store: ProfileStore, agent_id: str) -> None:
    assert isinstance(store, ProfileStore)
    assert store.read(agent_id, KEY) is None
    seen: list[Any] = []

    def change(current: Mapping[str, Any] | None) -> Mapping[str, Any]:
        seen.append(current)
        return bump(current)

    assert store.update(agent_id, KEY, change) == {"n": 1}
    assert store.update(agent_id, KEY, change) == {"n": 2}
    assert seen == [None, {"n": 1}]
    assert store.read(agent_id, KEY) == {"n": 2}
    assert store.read(agent_id, "other-key") is None
    assert agent_id in store.agents(KEY) and agent_id not in store.agents("other-key")
    assert store.delete(agent_id, KEY) is True
    assert store.delete(agent_id, KEY) is False
    assert store.read(agent_id, KEY) is None and agent_id not in store.agents(KEY)


def test_a_failing_change_leaves_the_document_intact(store: ProfileStore, agent_id: str) -> None:
    store.update(agent_id, KEY, bump)

    def broken(current: Mapping[str, Any] | None) -> Mapping[str, Any]:
        raise RuntimeError("bug in change")

    with pytest.raises(RuntimeError, match="bug in change"):
        store.update(agent_id, KEY, broken)
    assert store.read(agent_id, KEY) == {"n": 1}
    assert store.update(agent_id, KEY, bump) == {"n": 2}  # the store is still usable


def test_documents_do_not_alias(store: ProfileStore, agent_id: str) -> None:
    written = store.update(agent_id, KEY, lambda c: {"list": [1]})
    read = store.read(agent_id, KEY)
    assert read is not None
    read["list"].append(2)  # type: ignore[index]
    assert store.read(agent_id, KEY) == {"list": [1]} and written == {"list": [1]}


# ----------------------------------------------------------------------------- SQLite


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_sqlite_file_is_marked_and_in_wal_mode(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "p.sqlite3"
    s = SqliteStore.from_url(f"sqlite://{path}")
    s.update("a", KEY, bump)
    s.close()
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()


@pytest.mark.parametrize(
    "content", [b"this is not a database at all, just some text\n" * 50, b"SQLite format 3\x00" + b"\xff" * 4000]
)
def test_corrupt_file_is_refused_with_its_path_and_left_alone(tmp_path: Path, content: bytes) -> None:
    path = tmp_path / "priors.sqlite3"
    path.write_bytes(content)
    before = digest(path)
    s = SqliteStore.from_url(f"sqlite://{path}")
    for op in (lambda: s.read("a", KEY), lambda: s.update("a", KEY, bump)):
        with pytest.raises(StoreError) as info:
            op()
        message = str(info.value)
        assert str(path) in message
        assert "move or delete" in message and "-wal" in message  # how to reset it
    s.close()
    assert digest(path) == before  # never a silent wipe


def test_foreign_sqlite_database_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "app.db"
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    conn.execute("INSERT INTO users (name) VALUES ('ada')")
    conn.commit()
    conn.close()
    before = digest(path)
    with pytest.raises(StoreError, match=r"belongs to another program .*tables: users"):
        SqliteStore(path).update("a", KEY, bump)
    assert digest(path) == before
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "delete"  # not even switched to WAL
    conn.close()


def test_a_damaged_document_is_reported_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    s = SqliteStore(path)
    s.update("a", KEY, bump)
    s._connection().execute("UPDATE profiles SET doc='{broken' WHERE agent_id='a'")
    with pytest.raises(StoreError, match=r"agent 'a' is not valid JSON.*greenroom priors reset a"):
        s.update("a", KEY, bump)
    raw = s._connection().execute("SELECT doc FROM profiles").fetchone()[0]
    assert raw == "{broken"
    s.close()


def test_a_locked_database_is_retried_with_backoff(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    s = SqliteStore(path)
    s.update("a", KEY, bump)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process in the middle of a save
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(s.update("a", KEY, bump)))
    worker.start()
    deadline = time.monotonic() + 10
    while s.lock_retries < 2 and time.monotonic() < deadline:  # wait until it has backed off
        time.sleep(0.005)
    assert s.lock_retries >= 2 and not result
    holder.execute("COMMIT")
    holder.close()
    worker.join(10)
    assert result == [{"n": 2}]
    s.close()


def test_a_database_locked_for_too_long_gives_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "p.sqlite3"
    SqliteStore(path).update("a", KEY, bump)
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        s = SqliteStore.from_url(f"sqlite://{path}?timeout=0.3")
        with pytest.raises(StoreError, match=r"stayed locked for 0.3 s.*\?timeout=SECONDS"):
            s.update("a", KEY, bump)
        assert s.read("a", KEY) == {"n": 1}  # WAL: readers are not blocked by the writer
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_unusable_location_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    store = SqliteStore(blocker / "p.sqlite3")
    assert store.read("a", KEY) is None  # no file yet: nothing stored, nothing created
    with pytest.raises(StoreError, match=f"{blocker}.*cannot create its folder"):
        store.update("a", KEY, bump)


def test_reads_do_not_create_the_file(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "nested" / "p.sqlite3")
    assert store.read("a", KEY) is None and store.agents(KEY) == [] and store.delete("a", KEY) is False
    assert not (tmp_path / "nested").exists()


def test_sqlite_url_forms(tmp_path: Path) -> None:
    assert SqliteStore.from_url(f"sqlite://{tmp_path}/x.db").path == tmp_path / "x.db"
    assert SqliteStore.from_url("sqlite://rel/x.db").path == Path("rel/x.db")
    assert SqliteStore.from_url("sqlite:///abs/x.db?timeout=2").timeout == 2.0
    with pytest.raises(StoreError, match="timeout"):
        SqliteStore.from_url("sqlite:///abs/x.db?timeout=soon")


def test_unknown_scheme_lists_the_known_ones() -> None:
    with pytest.raises(StoreError, match=r"no profile store handles mongo:// URLs.*sqlite"):
        open_store("mongo://x", builtin_factories())
    with pytest.raises(StoreError, match="has no scheme"):
        open_store("just-a-path", builtin_factories())


def test_export_shape_is_plain_json(store: ProfileStore, agent_id: str) -> None:
    store.update(agent_id, KEY, lambda c: {"x": 1.5, "s": "é"})
    assert json.loads(json.dumps(store.read(agent_id, KEY))) == {"x": 1.5, "s": "é"}
