"""``postgresql://...`` profile store: one table shared by a fleet of agent processes.

Documents live in ``greenroom_profiles`` (``agent_id``, ``key``, ``doc jsonb``). An update
is one transaction: ``SELECT ... FOR UPDATE`` locks the agent's row (a missing row is
first created with ``INSERT ... ON CONFLICT DO NOTHING`` so that two first-time writers
also queue on one row), the change is applied, the row is written, the transaction
commits. Writers of one agent therefore run one after the other and none is lost; writers
of different agents do not wait for each other. Needs the ``postgres`` extra (psycopg 3).

It keeps a journal of calls too (``greenroom_priors.journal``, the statements in
``pg_journal``), on by default: a fleet's runs are told to the store as they happen.
A transaction that touches both tables locks the agent's document first, then its
journal rows, always in that order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlsplit

from greenroom_priors.ewma import DocumentError
from greenroom_priors.journal import FinishChange, JournalEntry, SweepChange, SweepReport, forget_after
from greenroom_priors.store import StoreError
from greenroom_priors.stores import pg_journal
from greenroom_priors.stores.urls import hide_url_secrets, redact

TABLE = "greenroom_profiles"
_LOCK_KEY = 0x67726D31  # advisory lock that serialises concurrent schema creation
DEFAULT_CONNECT_TIMEOUT = 5


class PostgresStore:
    """A ``ProfileStore`` in PostgreSQL (see the module docstring). One connection per
    store, used by one thread at a time."""

    journal_by_default = True  # a store a fleet shares: its runs journal their calls

    def __init__(self, url: str) -> None:
        try:
            import psycopg  # noqa: F401 - fail here, with the fix, not at first use
        except ImportError:
            raise StoreError(
                "the postgresql:// profile store needs psycopg 3: pip install 'greenroom[postgres]'"
            ) from None
        self.url = url
        self._dsn = url.replace("postgres://", "postgresql://", 1) if url.startswith("postgres://") else url
        params = dict(parse_qsl(urlsplit(self._dsn).query))
        self._connect_kwargs: dict[str, Any] = {}
        if "connect_timeout" not in params:
            # a database that is down must not hang an agent's run start
            self._connect_kwargs["connect_timeout"] = DEFAULT_CONNECT_TIMEOUT
        self._lock = threading.Lock()
        self._conn: Any = None

    @classmethod
    def from_url(cls, url: str) -> PostgresStore:
        return cls(url)

    # ------------------------------------------------------------------ connection
    def _error(self, exc: BaseException, doing: str) -> StoreError:
        detail = hide_url_secrets(str(exc).strip(), self.url)  # psycopg quotes parts of the URL it was given
        where = f"PostgreSQL profile store {redact(self.url)}"
        return StoreError(f"{where}: cannot {doing}: {type(exc).__name__}: {detail}")

    def _connection(self) -> Any:
        import psycopg

        if self._conn is not None and not self._conn.closed:
            return self._conn
        self._conn = None
        try:
            conn = psycopg.connect(self._dsn, autocommit=True, **self._connect_kwargs)
        except psycopg.Error as exc:
            raise self._error(exc, "connect") from None
        try:
            with conn.transaction():
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (_LOCK_KEY,))
                conn.execute(
                    f"CREATE TABLE IF NOT EXISTS {TABLE} ("
                    " agent_id text NOT NULL,"
                    " key text NOT NULL,"
                    " doc jsonb NOT NULL,"
                    " updated_at timestamptz NOT NULL DEFAULT now(),"
                    " PRIMARY KEY (agent_id, key))"
                )
                pg_journal.create(conn)
        except psycopg.Error as exc:
            conn.close()
            raise self._error(exc, f"create tables {TABLE}, {pg_journal.JOURNAL}") from None
        self._conn = conn
        return conn

    def _call(self, doing: str, op: Callable[[Any], Any], *, retry: bool) -> Any:
        """Run ``op(conn)``; a dropped connection is reopened once when ``retry`` (only for
        operations that are safe to repeat: an update whose commit may have landed is not)."""
        import psycopg

        with self._lock:
            for attempt in (1, 2):
                conn = self._connection()
                try:
                    return op(conn)
                except psycopg.OperationalError as exc:
                    if conn.closed and retry and attempt == 1:
                        self._conn = None
                        continue
                    if conn.closed:
                        self._conn = None
                    raise self._error(exc, doing) from None
                except psycopg.Error as exc:
                    raise self._error(exc, doing) from None
        raise AssertionError("unreachable")

    # ------------------------------------------------------------------ ProfileStore
    def read(self, agent_id: str, key: str) -> Mapping[str, Any] | None:
        def op(conn: Any) -> Mapping[str, Any] | None:
            row = conn.execute(f"SELECT doc FROM {TABLE} WHERE agent_id=%s AND key=%s", (agent_id, key)).fetchone()
            return self._doc(row, agent_id, key)

        result: Mapping[str, Any] | None = self._call("read", op, retry=True)
        return result

    def _doc(self, row: Any, agent_id: str, key: str) -> dict[str, Any] | None:
        if row is None or row[0] is None:  # JSON null: a first writer's placeholder
            return None
        if not isinstance(row[0], dict):
            raise StoreError(
                f"PostgreSQL profile store {redact(self.url)}: the stored {key} of agent "
                f"{agent_id!r} is not a JSON object; reset it with: "
                f"greenroom priors reset {agent_id} --store URL"
            )
        return row[0]

    def _locked_doc(self, conn: Any, agent_id: str, key: str) -> dict[str, Any] | None:
        """The agent's document, its row locked until the transaction ends."""
        select = f"SELECT doc FROM {TABLE} WHERE agent_id=%s AND key=%s FOR UPDATE"
        row = conn.execute(select, (agent_id, key)).fetchone()
        if row is None:
            # give first-time writers a row to queue on; it is replaced in this same
            # transaction, so no reader ever sees the placeholder
            conn.execute(
                f"INSERT INTO {TABLE} (agent_id, key, doc) VALUES (%s, %s, 'null'::jsonb) "
                "ON CONFLICT (agent_id, key) DO NOTHING",
                (agent_id, key),
            )
            row = conn.execute(select, (agent_id, key)).fetchone()
        return self._doc(row, agent_id, key)

    def _write_doc(self, conn: Any, agent_id: str, key: str, doc: Mapping[str, Any]) -> None:
        from psycopg.types.json import Jsonb

        conn.execute(
            f"UPDATE {TABLE} SET doc=%s, updated_at=now() WHERE agent_id=%s AND key=%s",
            (Jsonb(dict(doc)), agent_id, key),
        )

    def update(
        self, agent_id: str, key: str, change: Callable[[Mapping[str, Any] | None], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        def op(conn: Any) -> Mapping[str, Any]:
            with conn.transaction():
                new = change(self._locked_doc(conn, agent_id, key))
                self._write_doc(conn, agent_id, key, new)
            return new

        result: Mapping[str, Any] = self._call("save", op, retry=False)
        return result

    def delete(self, agent_id: str, key: str) -> bool:
        def op(conn: Any) -> bool:
            cur = conn.execute(f"DELETE FROM {TABLE} WHERE agent_id=%s AND key=%s", (agent_id, key))
            return bool(cur.rowcount)

        result: bool = self._call("delete", op, retry=True)
        return result

    def agents(self, key: str) -> list[str]:
        def op(conn: Any) -> list[str]:
            rows = conn.execute(
                f"SELECT agent_id FROM {TABLE} WHERE key=%s AND doc <> 'null'::jsonb ORDER BY agent_id", (key,)
            ).fetchall()
            return [r[0] for r in rows]

        result: list[str] = self._call("list agents", op, retry=True)
        return result

    # ------------------------------------------------------------------ JournalStore
    def journal(self, entries: Sequence[JournalEntry]) -> None:
        if not any(e.tallies for e in entries):
            return
        # a write only grows rows, so one whose commit may have landed is safe to repeat
        self._call("journal calls", lambda conn: pg_journal.write(conn, entries), retry=True)

    def finish_run(self, agent_id: str, key: str, run_id: str, change: FinishChange) -> Mapping[str, Any] | None:
        def op(conn: Any) -> Mapping[str, Any] | None:
            with conn.transaction():
                current = self._locked_doc(conn, agent_id, key)
                new = change(current, pg_journal.take_run(conn, agent_id, run_id))
                if new is not None:
                    self._write_doc(conn, agent_id, key, new)
            return new

        result: Mapping[str, Any] | None = self._call("save", op, retry=False)
        return result

    def sweep(self, key: str, stale_after: float, change: SweepChange) -> SweepReport:
        stale: dict[str, list[str]] = self._call(
            "find stale runs", lambda conn: pg_journal.stale_runs(conn, stale_after), retry=True
        )
        runs = calls = refused = 0
        for agent_id, run_ids in stale.items():

            def op(conn: Any, agent_id: str = agent_id, run_ids: list[str] = run_ids) -> tuple[int, int]:
                with conn.transaction():
                    current = self._locked_doc(conn, agent_id, key)
                    taken = pg_journal.take_stale(conn, agent_id, run_ids)
                    if taken:
                        self._write_doc(conn, agent_id, key, change(current, taken))
                        pg_journal.mark_folded(conn, agent_id, taken)
                return len(taken), sum(t.calls for r in taken for t in r.tools.values())

            try:
                # the fold and the marks commit together: a repeat after a dropped connection
                # finds what landed marked as folded, and folds nothing twice
                done, n = self._call("fold stale runs", op, retry=True)
            except DocumentError:  # this agent's document is broken: the others are swept
                refused += 1
                continue
            runs, calls = runs + done, calls + n
        forgotten: int = self._call(
            "forget folded runs", lambda conn: pg_journal.forget(conn, forget_after(stale_after)), retry=True
        )
        return SweepReport(runs, len(stale) - refused, calls, forgotten, refused)

    def journal_counts(self, agent_id: str, key: str) -> tuple[Mapping[str, Any] | None, dict[str, int]]:
        def op(conn: Any) -> tuple[Mapping[str, Any] | None, dict[str, int]]:
            doc, unfolded = pg_journal.counts(conn, TABLE, agent_id, key)
            return self._doc((doc,), agent_id, key), unfolded

        result: tuple[Mapping[str, Any] | None, dict[str, int]] = self._call("read", op, retry=True)
        return result

    def ping(self) -> None:
        self._call("answer", lambda conn: conn.execute("SELECT 1").fetchone(), retry=True)

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None
