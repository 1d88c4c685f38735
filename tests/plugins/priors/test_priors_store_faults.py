"""Store faults found by trying (issue 23, item 4): a store path that is a FIFO or a
device, a scheme no plugin provides, a non-UTF-8 import file, and a PostgreSQL server
that accepts connections and never answers."""

from __future__ import annotations

import os
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import anyio
import pytest
import typer
from priors_testutil import SCRIPT_3_STEPS, Events
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom import Runtime
from greenroom.events import PluginWarning
from greenroom_priors import KEY, PriorsConfig, PriorsPlugin, SqliteStore, StoreError
from greenroom_priors.events import PriorsLoaded

pytestmark = pytest.mark.anyio

BOUND = 10.0  # seconds: a guard against a hang, never a sleep
needs_fifo = pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes on this platform")


@pytest.fixture
def fifo(tmp_path: Path) -> Path:
    path = tmp_path / "priors.fifo"
    os.mkfifo(path)
    return path


def _bounded(fn: Callable[[], object]) -> BaseException | None:
    """``fn``'s exception, run in a daemon thread that must end within BOUND seconds."""
    caught: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:
            caught.append(exc)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), "the store hung on its path"
    return caught[0] if caught else None


@needs_fifo
def test_a_fifo_store_is_refused_not_opened(fifo: Path) -> None:
    store = SqliteStore.from_url(f"sqlite://{fifo}")
    exc = _bounded(lambda: store.read("a", KEY))
    assert isinstance(exc, StoreError)
    assert str(fifo) in str(exc) and "not a regular file" in str(exc) and "FIFO" in str(exc)


@pytest.mark.skipif(not Path("/dev/null").exists(), reason="no /dev/null")
def test_a_device_store_is_refused() -> None:
    exc = _bounded(lambda: SqliteStore.from_url("sqlite:////dev/null").update("a", KEY, lambda c: {"n": 1}))
    assert isinstance(exc, StoreError)
    assert "/dev/null" in str(exc) and "not a regular file" in str(exc) and "character device" in str(exc)


@needs_fifo
async def test_a_run_with_a_fifo_store_ends_with_the_error(
    fifo: Path, build: Callable[..., Runtime], events: Events
) -> None:
    rt = build(SCRIPT_3_STEPS, config=PriorsConfig(store=f"sqlite://{fifo}"))
    with anyio.fail_after(BOUND):
        outcome = await rt.session().run("hi")
    assert outcome.stop_reason == "final"
    messages = [e.message for e in events.of(PluginWarning)]
    assert messages and all(str(fifo) in m and "not a regular file" in m for m in messages)


@needs_fifo
async def test_a_fifo_store_fails_the_run_when_configured_to(fifo: Path, build: Callable[..., Runtime]) -> None:
    rt = build(SCRIPT_3_STEPS, config=PriorsConfig(store=f"sqlite://{fifo}", on_store_error="raise"))
    with anyio.fail_after(BOUND), pytest.raises(Exception, match="not a regular file"):
        await rt.session().run("hi")


def test_regular_and_missing_files_are_still_stores(tmp_path: Path) -> None:
    missing = SqliteStore.from_url(f"sqlite://{tmp_path / 'new' / 'p.sqlite3'}")
    missing.update("a", KEY, lambda c: {"n": 1})
    missing.close()
    again = SqliteStore.from_url(f"sqlite://{tmp_path / 'new' / 'p.sqlite3'}")
    assert again.read("a", KEY) == {"n": 1}
    again.close()


# ---------------------------------------------------------------- unknown scheme


def test_config_check_connect_rejects_a_scheme_no_plugin_provides(tmp_path: Path) -> None:
    from greenroom.compose.check import check_config

    cfg = tmp_path / "agent.toml"
    cfg.write_text('[model]\nprovider = "scripted"\n[plugins.priors-persistence]\nstore = "redis://cache:6379/0"\n')
    report = check_config(cfg, connect=True)
    found = [f for f in report.findings.items if "redis://" in f.message]
    assert report.exit_code != 0 and len(found) == 1, report.findings.items
    assert found[0].path == "plugins.priors-persistence" and found[0].file == str(cfg)
    assert "available: memory, postgres, postgresql, sqlite" in found[0].message


# ---------------------------------------------------------------- priors import


runner = CliRunner()


@pytest.fixture
def app() -> typer.Typer:
    return plugin_cli(PriorsPlugin())  # type: ignore[no-any-return]


def test_import_of_a_non_utf8_file_is_a_clear_error(app: typer.Typer, tmp_path: Path) -> None:
    bad = tmp_path / "latin1.json"
    bad.write_bytes(b'{"format": "caf\xe9"}\n')
    result = runner.invoke(app, ["priors", "import", "a", str(bad), "--store", "memory://faults"])
    assert result.exit_code == 2, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert str(bad) in result.output and "not UTF-8" in result.output and "0xe9" in result.output
    assert "Traceback" not in result.output


def test_import_of_non_utf8_standard_input_is_a_clear_error(app: typer.Typer) -> None:
    result = runner.invoke(app, ["priors", "import", "a", "-", "--store", "memory://faults"], input=b"\xff\xfe{}")
    assert result.exit_code == 2, result.output
    assert "standard input" in result.output and "not UTF-8" in result.output
    assert "Traceback" not in result.output


# ---------------------------------------------------------------- a silent PostgreSQL


class SilentServer:
    """A TCP listener that accepts every connection and never says a word."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = int(self.sock.getsockname()[1])
        self.accepted: list[socket.socket] = []
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.accepted.append(conn)

    def close(self) -> None:
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the accept() that close alone leaves waiting
        except OSError:
            pass
        self.sock.close()
        for conn in self.accepted:
            conn.close()
        self.thread.join(BOUND)


@pytest.fixture
def silent() -> Iterator[SilentServer]:
    server = SilentServer()
    yield server
    server.close()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX sockets")
async def test_a_silent_postgres_costs_one_connect_wait_for_two_runs(
    silent: SilentServer, build: Callable[..., Runtime], events: Events
) -> None:
    pytest.importorskip("psycopg")
    # psycopg's smallest connect timeout is 2 s; sslmode/gssencmode off: one connection an attempt
    url = f"postgresql://bob@127.0.0.1:{silent.port}/db?connect_timeout=2&sslmode=disable&gssencmode=disable"
    rt = build([*SCRIPT_3_STEPS, *SCRIPT_3_STEPS], config=PriorsConfig(store=url))
    with anyio.fail_after(3 * BOUND):
        for _ in range(2):  # two runs of one runtime: the failure is remembered by its store
            outcome = await rt.session().run("hi")
            assert outcome.stop_reason == "final"
    assert len(silent.accepted) == 1  # one connect attempt in all: not one per run start and end
    assert [e.source for e in events.of(PriorsLoaded)] == ["defaults", "defaults"]
    messages = [e.message for e in events.of(PluginWarning)]
    # start, end; start, end: no call waited on the store or said anything
    assert len(messages) == 4 and all("not retried yet" in m for m in messages[1:])
    assert all("spooled in" in m for m in messages[1::2])


async def test_a_down_store_is_tried_again_after_the_interval(
    build: Callable[..., Runtime], events: Events, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    from greenroom_priors import keeper

    path = tmp_path / "later.sqlite3"
    path.mkdir()  # a directory where the file should be: fails at run start
    url = f"sqlite://{path}"
    rt = build([*SCRIPT_3_STEPS] * 3, config=PriorsConfig(store=url))
    await rt.session().run("one")
    path.rmdir()
    await rt.session().run("two")
    assert not path.exists()  # within the interval: neither run start nor run end tried it
    now = keeper.monotonic()
    monkeypatch.setattr(keeper, "monotonic", lambda: now + keeper.RETRY_AFTER + 1)
    await rt.session().run("three")
    assert path.is_file()  # tried again, and saved: the two runs it could not take, then this one
    assert [e.source for e in events.of(PriorsLoaded)][-1].startswith("sqlite://")
    store = SqliteStore.from_url(url)
    doc = store.read("agent", KEY)
    store.close()
    assert doc is not None and doc["sessions"] == 3 and doc["tools"]["alpha"]["calls"] == 6
