"""``sqlite:///path`` profile store: one embedded file, safe for many processes.

Why it is safe:

- WAL journal: readers never block the writer, and a process killed at any moment
  leaves the last committed documents (the WAL is replayed or ignored at the next open).
- Each update is one ``BEGIN IMMEDIATE`` transaction (read, change, write, commit): the
  write lock is taken before reading, so two processes can never both fold into the same
  old document. A database locked by another writer is retried with jittered
  exponential backoff until ``timeout`` seconds have passed.
- The file is marked with an SQLite ``application_id``. A file that is not SQLite, is
  damaged, or belongs to another program is refused with a ``StoreError`` that names the
  path and how to reset it; it is never rewritten.
"""

from __future__ import annotations

import json
import os
import random
import sqlite3
import stat
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar
from urllib.parse import parse_qs

from greenroom_priors.store import StoreError
from greenroom_priors.stores.urls import default_url

T = TypeVar("T")

APPLICATION_ID = 0x67726D31  # "grm1": marks a greenroom profile store
SCHEMA_VERSION = 1
SQLITE_HEADER = b"SQLite format 3\x00"
DEFAULT_TIMEOUT = 10.0
BUSY_SLICE = 0.1  # sqlite's own busy wait per attempt; our backoff loop does the rest

_SCHEMA = """
CREATE TABLE IF NOT EXISTS profiles (
    agent_id TEXT NOT NULL,
    key      TEXT NOT NULL,
    doc      TEXT NOT NULL,
    updated  REAL NOT NULL,
    PRIMARY KEY (agent_id, key)
)
"""


class _Busy(Exception):
    """The database was locked by another connection; worth another try."""


class SqliteStore:
    """A ``ProfileStore`` in one SQLite file (see the module docstring)."""

    def __init__(self, path: str | Path, *, timeout: float = DEFAULT_TIMEOUT, url: str | None = None) -> None:
        self.path = Path(path).expanduser()
        self.url = url or f"sqlite://{self.path.as_posix()}"
        self.timeout = timeout
        self.lock_retries = 0  # how often a locked database made us back off (observability)
        self._lock = threading.Lock()
        self._conn: sqlite3.Connection | None = None

    # ------------------------------------------------------------------ URL
    @staticmethod
    def path_of(url: str) -> Path | None:
        """``sqlite:///abs/file`` -> /abs/file, ``sqlite://rel/file`` -> rel/file."""
        rest = url.partition("://")[2].partition("?")[0]
        return Path(rest).expanduser() if rest else None

    @classmethod
    def from_url(cls, url: str) -> SqliteStore:
        path = cls.path_of(url)
        if path is None:  # a bare sqlite:// means the default file
            return cls.from_url(default_url())
        query = parse_qs(url.partition("?")[2])
        timeout = DEFAULT_TIMEOUT
        if "timeout" in query:
            try:
                timeout = float(query["timeout"][-1])
            except ValueError:
                raise StoreError(f"{url}: timeout must be a number of seconds") from None
        return cls(path, timeout=timeout, url=url)

    # ------------------------------------------------------------------ errors
    def _reset_hint(self) -> str:
        return (
            f"greenroom does not modify it. To start with empty priors, move or delete "
            f"{self.path} (and {self.path.name}-wal, {self.path.name}-shm beside it), or point "
            f"[plugins.priors-persistence] store at another file"
        )

    def _corrupt(self, what: str) -> StoreError:
        return StoreError(f"{self.path}: {what}; {self._reset_hint()}")

    @contextmanager
    def _errors(self) -> Iterator[None]:
        """sqlite3 exceptions -> _Busy (retry) or StoreError (with the path and a fix)."""
        try:
            yield
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if "locked" in text or "busy" in text:
                raise _Busy(str(exc)) from exc
            if "malformed" in text or "not a database" in text:
                raise self._corrupt(f"the database is damaged ({exc})") from exc
            raise StoreError(f"{self.path}: cannot use the priors database: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            # not OperationalError: "file is not a database", "database disk image is malformed"
            raise self._corrupt(f"not a usable SQLite database ({exc})") from exc

    # ------------------------------------------------------------------ connection
    def _check_kind(self) -> None:
        """A FIFO or a device would hang the first read (or SQLite's open) forever: only a
        regular file, or nothing yet, is a store. ``stat`` follows symlinks and never blocks."""
        try:
            mode = os.stat(self.path).st_mode
        except (FileNotFoundError, NotADirectoryError):
            return
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot use the priors database: {exc.strerror}") from exc
        if stat.S_ISREG(mode):
            return
        kinds = {
            stat.S_ISFIFO: "a FIFO (named pipe)",
            stat.S_ISCHR: "a character device",
            stat.S_ISBLK: "a block device",
            stat.S_ISSOCK: "a socket",
            stat.S_ISDIR: "a directory",
        }
        kind = next((name for test, name in kinds.items() if test(mode)), "not a file")
        raise StoreError(
            f"{self.path}: not a regular file ({kind}); the priors store must be an SQLite file. "
            f"Point [plugins.priors-persistence] store at a file path"
        )

    def _check_header(self) -> None:
        try:
            with self.path.open("rb") as fh:
                head = fh.read(len(SQLITE_HEADER))
        except (FileNotFoundError, NotADirectoryError):
            return  # nothing there yet; creating the folder says what is wrong, if anything
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot read the priors database: {exc.strerror}") from exc
        if head and head != SQLITE_HEADER:
            raise self._corrupt("this file is not an SQLite database (corrupt or foreign file)")

    def _connection(self) -> sqlite3.Connection:
        if self._conn is not None:
            return self._conn
        # look at the bytes first: sqlite3 would happily treat some garbage as a new database
        self._check_kind()
        self._check_header()
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(f"{self.path}: cannot create its folder: {exc.strerror}") from exc
        with self._errors():
            conn = sqlite3.connect(
                self.path, timeout=min(BUSY_SLICE, self.timeout), isolation_level=None, check_same_thread=False
            )
        try:
            with self._errors():
                self._prepare(conn)
        except BaseException:
            conn.close()
            raise
        self._conn = conn
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        app_id, tables = self._identity(conn)
        if app_id not in (0, APPLICATION_ID) or (app_id == 0 and tables):
            raise self._corrupt(
                f"this SQLite database belongs to another program (application_id {app_id:#x}, "
                f"tables: {', '.join(tables) or 'none'}), not a greenroom priors store"
            )
        if app_id == 0:
            # a brand-new file: switch to WAL (persistent, outside any transaction) and
            # create the schema under the write lock, re-checking in case another process won
            conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("BEGIN IMMEDIATE")
            try:
                app_id, tables = self._identity(conn)
                if app_id == 0 and not tables:
                    conn.execute(_SCHEMA)
                    conn.execute(f"PRAGMA application_id={APPLICATION_ID}")
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
            if app_id not in (0, APPLICATION_ID):
                raise self._corrupt("another program claimed this database while it was being created")
        else:
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            if version > SCHEMA_VERSION:
                raise StoreError(
                    f"{self.path}: written by a newer greenroom (store schema {version}, "
                    f"this one reads {SCHEMA_VERSION}); upgrade greenroom"
                )
            mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
            if str(mode).lower() != "wal":
                conn.execute("PRAGMA journal_mode=WAL")
        # a committed save survives power loss too, not only a killed process
        conn.execute("PRAGMA synchronous=FULL")

    @staticmethod
    def _identity(conn: sqlite3.Connection) -> tuple[int, list[str]]:
        app_id = int(conn.execute("PRAGMA application_id").fetchone()[0])
        tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        return app_id, tables

    def _run(self, op: Callable[[sqlite3.Connection], T]) -> T:
        """Run ``op`` with the connection; back off and retry while the database is locked."""
        deadline = time.monotonic() + self.timeout
        delay = 0.005
        while True:
            try:
                with self._lock, self._errors():
                    return op(self._connection())
            except _Busy as exc:
                busy = exc
            if time.monotonic() + delay > deadline:
                raise StoreError(
                    f"{self.path}: the priors database stayed locked for {self.timeout:g} s ({busy}); "
                    "another process holds a long write transaction. Retry, or raise the wait "
                    "with ?timeout=SECONDS in the store URL"
                )
            self.lock_retries += 1
            time.sleep(delay * random.uniform(0.5, 1.5))  # jitter: writers do not retry in lockstep
            delay = min(delay * 2, 0.2)

    def _missing(self) -> bool:
        """No file yet: reads answer 'nothing' without creating one (``priors show`` on a
        fresh machine must not leave files behind)."""
        return self._conn is None and not self.path.exists()

    def _decode(self, text: str, agent_id: str, key: str) -> dict[str, Any]:
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StoreError(
                f"{self.path}: the stored {key} of agent {agent_id!r} is not valid JSON ({exc}); "
                f"reset it with: greenroom priors reset {agent_id} --store {self.url}"
            ) from None
        if not isinstance(doc, dict):
            raise StoreError(
                f"{self.path}: the stored {key} of agent {agent_id!r} is not a JSON object; "
                f"reset it with: greenroom priors reset {agent_id} --store {self.url}"
            )
        return doc

    # ------------------------------------------------------------------ ProfileStore
    def read(self, agent_id: str, key: str) -> Mapping[str, Any] | None:
        def op(conn: sqlite3.Connection) -> Mapping[str, Any] | None:
            row = conn.execute("SELECT doc FROM profiles WHERE agent_id=? AND key=?", (agent_id, key)).fetchone()
            return self._decode(row[0], agent_id, key) if row else None

        return None if self._missing() else self._run(op)

    def update(
        self, agent_id: str, key: str, change: Callable[[Mapping[str, Any] | None], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        """Read, change and write in one ``BEGIN IMMEDIATE`` transaction. ``change`` may run
        again if the commit has to be retried, so it must depend only on its argument."""

        def op(conn: sqlite3.Connection) -> Mapping[str, Any]:
            conn.execute("BEGIN IMMEDIATE")
            try:
                row = conn.execute("SELECT doc FROM profiles WHERE agent_id=? AND key=?", (agent_id, key)).fetchone()
                current = self._decode(row[0], agent_id, key) if row else None
                new = change(current)
                text = json.dumps(new, sort_keys=True, separators=(",", ":"), allow_nan=False)
                conn.execute(
                    "INSERT INTO profiles (agent_id, key, doc, updated) VALUES (?, ?, ?, ?) "
                    "ON CONFLICT (agent_id, key) DO UPDATE SET doc=excluded.doc, updated=excluded.updated",
                    (agent_id, key, text, time.time()),
                )
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            return new

        return self._run(op)

    def delete(self, agent_id: str, key: str) -> bool:
        def op(conn: sqlite3.Connection) -> bool:
            cur = conn.execute("DELETE FROM profiles WHERE agent_id=? AND key=?", (agent_id, key))
            return cur.rowcount > 0

        return False if self._missing() else self._run(op)

    def agents(self, key: str) -> list[str]:
        def op(conn: sqlite3.Connection) -> list[str]:
            rows = conn.execute("SELECT agent_id FROM profiles WHERE key=? ORDER BY agent_id", (key,))
            return [r[0] for r in rows]

        return [] if self._missing() else self._run(op)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
