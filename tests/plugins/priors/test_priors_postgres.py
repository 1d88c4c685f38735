"""PostgreSQL specifics: first-time writers racing on a missing row, a server that is
down, and passwords kept out of messages."""

from __future__ import annotations

import socket
import threading
from collections.abc import Callable
from typing import Any

import pytest
from priors_testutil import SCRIPT_3_STEPS, Events

from greenroom import Runtime
from greenroom.events import PluginWarning
from greenroom_priors import KEY, PostgresStore, PriorsConfig
from greenroom_priors.events import PriorsLoaded
from greenroom_priors.store import StoreError

pytestmark = pytest.mark.anyio


def test_first_writers_racing_on_a_new_agent_lose_nothing(pg_url: str, agent_id: str) -> None:
    stores = [PostgresStore(pg_url) for _ in range(8)]
    barrier = threading.Barrier(len(stores))
    errors: list[BaseException] = []

    def write(store: PostgresStore) -> None:
        try:
            barrier.wait()
            for _ in range(10):
                store.update(agent_id, KEY, lambda c: {"n": (c or {"n": 0})["n"] + 1})
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s,)) for s in stores]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors
    assert stores[0].read(agent_id, KEY) == {"n": 80}
    for s in stores:
        s.close()


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_server_down_is_a_store_error_without_the_password() -> None:
    url = f"postgresql://bob:hunter2@127.0.0.1:{closed_port()}/db?connect_timeout=2"
    with pytest.raises(StoreError) as info:
        PostgresStore(url).read("a", KEY)
    message = str(info.value)
    assert "cannot connect" in message and "postgresql://127.0.0.1:" in message and "bob" not in message
    assert "hunter2" not in message


async def test_run_goes_on_when_postgres_is_down(build: Callable[..., Runtime], events: Events) -> None:
    url = f"postgresql://bob:hunter2@127.0.0.1:{closed_port()}/db?connect_timeout=2"
    outcome = await build(SCRIPT_3_STEPS, config=PriorsConfig(store=url)).session().run("hi")
    assert outcome.stop_reason == "final"
    assert events.of(PriorsLoaded)[0].source == "defaults"
    messages = [e.message for e in events.of(PluginWarning)]
    # run start, then run end (no call waited on the store, nor said anything)
    assert len(messages) == 2 and all("hunter2" not in m for m in messages)
    assert "3 call(s) of agent 'agent' spooled in" in messages[1] and "saved when it is back" in messages[1]


def test_reconnects_after_the_connection_drops(pg_url: str, agent_id: str) -> None:
    store = PostgresStore(pg_url)
    store.update(agent_id, KEY, lambda c: {"n": 1})
    conn: Any = store._conn
    killer = PostgresStore(pg_url)
    killer._connection().execute("SELECT pg_terminate_backend(%s)", (conn.info.backend_pid,))
    killer.close()
    assert store.read(agent_id, KEY) == {"n": 1}  # reads retry once on a fresh connection
    store.close()
