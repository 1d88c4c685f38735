"""Fixtures for the priors-persistence tests: the anyio backend, store URLs for every
built-in backend (PostgreSQL only when GREENROOM_TEST_POSTGRES_URL is set), and a
runtime factory wired to the plugin."""

from __future__ import annotations

import sys
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from greenroom import AgentConfig, EventBus, Plugin, Runtime
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom_priors import MemoryStore, PriorsConfig, PriorsPlugin

sys.path.insert(0, str(Path(__file__).resolve().parent))  # for priors_testutil

from priors_testutil import TOOLS, Events, PgCtl, postgres_url


@pytest.fixture
def pg_url() -> str:
    return postgres_url()


@pytest.fixture
def pg_ctl(pg_url: str) -> Iterator[PgCtl]:
    """Stops and starts the test server (``.ci/postgres.sh``); leaves it running after."""
    from greenroom_priors import PostgresStore

    ctl = PgCtl.from_env()
    yield ctl
    try:
        PostgresStore(pg_url).ping()
    except Exception:
        ctl.start()  # never leave the server down for the tests after this one


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    return f"sqlite://{(tmp_path / 'priors.sqlite3').as_posix()}"


@pytest.fixture(params=["memory", "sqlite", "postgresql"])
def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """One URL per backend; each test gets an empty namespace."""
    kind = request.param
    if kind == "memory":
        name = f"t{uuid.uuid4().hex[:8]}"
        yield f"memory://{name}"
        MemoryStore.forget(name)
    elif kind == "sqlite":
        yield f"sqlite://{(tmp_path / 'priors.sqlite3').as_posix()}"
    else:
        yield postgres_url()


@pytest.fixture
def agent_id() -> str:
    """A fresh agent id, so tests sharing one PostgreSQL database never meet."""
    return f"agent-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def events() -> Events:
    return Events()


@pytest.fixture
def build(events: Events) -> Callable[..., Runtime]:
    """A runtime with the priors plugin (plus ``plugins``) playing ``turns``."""

    def make(
        turns: Sequence[Any],
        *,
        config: PriorsConfig | None = None,
        agent: str = "agent",
        plugins: Sequence[Plugin] = (),
    ) -> Runtime:
        bus = EventBus()
        bus.subscribe(events)
        host = make_plugin_host(records=[], extra=[PriorsPlugin(config or PriorsConfig()), *plugins])
        return Runtime(
            model=ScriptedModel(list(turns)), tools=TOOLS, host=host, agent=AgentConfig(id=agent), events=bus
        )

    return make
