"""Many processes, one store: no lost update; and kill -9 in the middle of saves leaves
either the old or the new priors, never a torn or empty document."""

from __future__ import annotations

import random
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from priors_testutil import HERE, postgres_url

from greenroom_priors import KEY, fold_document, open_store
from greenroom_priors.stores import builtin_factories

pytestmark = pytest.mark.slow

WORKERS = 4
SESSIONS = 25


def concurrent_sessions(url: str, agent: str) -> dict[str, Any]:
    procs = [
        subprocess.Popen(
            [sys.executable, str(HERE / "worker_sessions.py"), url, agent, str(SESSIONS), str(w)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for w in range(WORKERS)
    ]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    store = open_store(url, builtin_factories())
    doc = store.read(agent, KEY)
    store.close()
    assert doc is not None
    return dict(doc)


def check_no_lost_update(doc: dict[str, Any]) -> None:
    assert doc["sessions"] == WORKERS * SESSIONS  # exactly 100 sessions counted
    alpha, beta = doc["tools"]["alpha"], doc["tools"]["beta"]
    assert alpha["calls"] == WORKERS * SESSIONS  # every session called alpha once
    assert beta["calls"] == (WORKERS // 2) * SESSIONS  # odd workers also called beta
    # every session saw alpha in 1 of 2 steps, so the EWMA stays at exactly 0.5
    assert alpha["p"] == pytest.approx(0.5) and beta["p"] == pytest.approx(0.5)


def test_four_processes_share_one_sqlite_file(tmp_path: Path) -> None:
    check_no_lost_update(concurrent_sessions(f"sqlite://{tmp_path / 'shared.sqlite3'}", "fleet"))


def test_four_processes_share_one_postgres_database(agent_id: str) -> None:
    check_no_lost_update(concurrent_sessions(postgres_url(), agent_id))


class ExpectedDocuments:
    """The document after n whole saves of worker_crash.py, for any n (computed once)."""

    def __init__(self) -> None:
        sys.path.insert(0, str(HERE))
        from worker_crash import observation  # the worker's own deterministic observations

        self.observation = observation
        self.docs: list[Any] = [None]

    def __getitem__(self, n: int) -> Any:
        while len(self.docs) <= n:
            k = len(self.docs) - 1
            self.docs.append(fold_document(self.docs[k], self.observation(k), now=f"t{k}"))
        return self.docs[n]


@pytest.mark.parametrize("backend", ["sqlite", "postgresql"])
def test_kill_9_in_the_middle_of_saves_keeps_old_or_new_priors(backend: str, tmp_path: Path, agent_id: str) -> None:
    url = f"sqlite://{tmp_path / 'crash.sqlite3'}" if backend == "sqlite" else postgres_url()
    rng = random.Random(20240607)
    committed = 0  # sessions the store must hold at least (the worker said it committed them)
    expected = ExpectedDocuments()
    for _ in range(20):
        proc = subprocess.Popen(
            [sys.executable, str(HERE / "worker_crash.py"), url, agent_id],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert proc.stdout is not None
        # kill it a random number of saves in: it is saving back to back, so the signal
        # lands inside a transaction most of the time (before, during or after COMMIT)
        target = rng.randint(1, 15)
        seen = 0
        for line in proc.stdout:
            committed = max(committed, int(line))
            seen += 1
            if seen >= target:
                break
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert proc.returncode == -signal.SIGKILL, proc.stderr.read() if proc.stderr else ""
        # it kept saving between our last read and the signal: what it printed meanwhile
        # is committed too (the pipe holds it after the process is gone)
        reported = committed
        for line in proc.stdout:
            reported = max(reported, int(line))
        proc.stdout.close()
        if proc.stderr:
            proc.stderr.close()

        store = open_store(url, builtin_factories())  # opens: the file is not damaged
        doc = store.read(agent_id, KEY)
        store.close()
        assert doc is not None
        n = doc["sessions"]
        # every reported save is there; at most one more (killed after COMMIT, before print)
        assert reported <= n <= reported + 1
        assert doc == expected[n]  # exactly the document of n whole saves
        committed = n
    if backend == "sqlite":
        import sqlite3

        conn = sqlite3.connect(tmp_path / "crash.sqlite3")
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
