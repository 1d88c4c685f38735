"""The journal of calls in PostgreSQL (issues 26, 37): concurrent runs in threads and
processes count exactly; a process killed mid-calls leaves every call of its last
checkpoint in the journal, and a sweep folds them once; a server stopped or restarted
mid-run or between runs loses and doubles nothing.
Counts are checked as ``exact_calls``: the document's calls plus the journal's unfolded
calls, read in one statement."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from typing import Any

import anyio
import pytest
from priors_testutil import HERE, ClientRun, Events, PgCtl, alpha, beta, gamma
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom import AgentConfig, EventBus, Runtime
from greenroom.events import PluginWarning
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom_priors import KEY, PostgresStore, PriorsConfig, PriorsPlugin, ToolTally, exact_calls, keeper
from greenroom_priors.journal import JournalEntry, PriorsSwept
from greenroom_priors.stores import redact

pytestmark = pytest.mark.anyio

TINY = 1e-6


@pytest.fixture
def store(pg_url: str) -> Iterator[PostgresStore]:
    s = PostgresStore(pg_url)
    yield s
    s.close()


def runtime(url: str, agent: str, events: Events | None = None, **config: Any) -> Runtime:
    bus = EventBus()
    if events is not None:
        bus.subscribe(events)
    plugin = PriorsPlugin(PriorsConfig(store=url, **config))
    host = make_plugin_host(records=[], extra=[plugin])
    return Runtime(
        model=ScriptedModel([]), tools=[alpha, beta, gamma], host=host, agent=AgentConfig(id=agent), events=bus
    )


def priors_of(rt: Runtime) -> PriorsPlugin:
    return next(p for p in rt.host.pm.get_plugins() if isinstance(p, PriorsPlugin))


def unfolded(store: PostgresStore, agent: str) -> dict[str, int]:
    return store.journal_counts(agent, KEY)[1]


def test_a_row_only_grows_so_a_repeated_write_counts_nothing_twice(store: PostgresStore, agent_id: str) -> None:
    store.journal([JournalEntry(agent_id, "r1", 3, {"alpha": ToolTally(2, 2), "beta": ToolTally(1, 1)})])
    store.journal([JournalEntry(agent_id, "r1", 3, {"alpha": ToolTally(2, 2)})])  # a commit retried
    store.journal([JournalEntry(agent_id, "r1", 2, {"alpha": ToolTally(1, 1)})])  # an older write, late
    assert unfolded(store, agent_id) == {"alpha": 2, "beta": 1}
    doc = store.finish_run(agent_id, KEY, "r1", lambda current, counts: {"seen": dict(counts)})
    assert doc == {"seen": {"alpha": 2, "beta": 1}}
    assert store.journal_counts(agent_id, KEY) == ({"seen": {"alpha": 2, "beta": 1}}, {})
    # a repeat of a RunEnd that landed, its tallies written again first (a run saved again
    # from the spool), finds nothing left to fold
    store.journal([JournalEntry(agent_id, "r1", 3, {"alpha": ToolTally(2, 2), "beta": ToolTally(1, 1)})])
    assert store.finish_run(agent_id, KEY, "r1", lambda current, counts: {"again": dict(counts)}) == {"again": {}}


def test_concurrent_runs_in_threads_and_processes_count_exactly(pg_url: str, agent_id: str) -> None:
    pattern = ["alpha", "beta", "alpha", "gamma", "alpha"]
    threads, runs_each = 3, 4
    errors: list[BaseException] = []

    def thread_runs() -> None:
        async def main() -> None:
            rt = runtime(pg_url, agent_id, on_store_error="raise")
            try:
                for _ in range(runs_each):
                    client = await ClientRun(rt).start()
                    for name in pattern:
                        assert not (await client.call(name)).is_error
                    await client.end()
            finally:
                await rt.aclose()

        try:
            anyio.run(main)
        except BaseException as exc:
            errors.append(exc)

    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(HERE / "worker_journal.py"),
                pg_url,
                agent_id,
                "runs",
                str(runs_each),
                ",".join(pattern),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    pool = [threading.Thread(target=thread_runs) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(300)
    outputs = [w.communicate(timeout=300) for w in workers]
    assert not errors, errors
    assert all(w.returncode == 0 for w in workers), outputs
    runs = (threads + len(workers)) * runs_each
    assert sum(int(out) for out, _ in outputs) == len(workers) * runs_each * len(pattern)
    s = PostgresStore(pg_url)
    assert exact_calls(s, agent_id, KEY) == {"alpha": 3 * runs, "beta": runs, "gamma": runs}
    assert unfolded(s, agent_id) == {}  # every run ended: all of it folded
    doc = s.read(agent_id, KEY)
    assert doc is not None and doc["sessions"] == runs
    s.close()


async def test_concurrent_runs_of_one_gateway_count_exactly(pg_url: str, agent_id: str) -> None:
    rt = runtime(pg_url, agent_id, on_store_error="raise")
    clients = [await ClientRun(rt).start() for _ in range(20)]

    async def calls(client: ClientRun) -> None:
        for name in ("alpha", "beta", "alpha", "gamma", "alpha"):
            assert not (await client.call(name)).is_error

    async with anyio.create_task_group() as tg:
        for client in clients:
            tg.start_soon(calls, client)
    await priors_of(rt).checkpoint()  # the 20 runs in one write
    s = PostgresStore(pg_url)
    assert exact_calls(s, agent_id, KEY) == unfolded(s, agent_id) == {"alpha": 60, "beta": 20, "gamma": 20}
    for client in clients:
        await client.end()
    assert exact_calls(s, agent_id, KEY) == {"alpha": 60, "beta": 20, "gamma": 20} and unfolded(s, agent_id) == {}
    s.close()
    await rt.aclose()


class Stepped:
    """A worker process holding one client run open, calling a tool per request."""

    def __init__(self, url: str, agent: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HERE / "worker_journal.py"), url, agent, "stepped"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert self._line() == "started"

    def _line(self) -> str:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline().strip()
        if not line:
            raise AssertionError(f"worker gave up: {self.proc.communicate(timeout=60)}")
        return line

    def call(self, name: str) -> bool:
        """Whether the client saw the call succeed."""
        return self._say(name) == f"ok {name}"

    def checkpoint(self) -> None:
        assert self._say("checkpoint") == "checkpointed"

    def _say(self, line: str) -> str:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()
        return self._line()

    def kill(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait(60)
        assert self.proc.returncode == -signal.SIGKILL


async def test_a_killed_process_leaves_its_calls_and_a_sweep_folds_them_once(
    pg_url: str, store: PostgresStore, agent_id: str, events: Events
) -> None:
    a, b = f"{agent_id}-a", f"{agent_id}-b"
    seen: dict[str, dict[str, int]] = {}
    for agent in (a, b):
        worker = Stepped(pg_url, agent)
        seen[agent] = {}
        for name in ["alpha", "beta", "alpha", "alpha", "gamma", "beta", "alpha"]:
            if worker.call(name):
                seen[agent][name] = seen[agent].get(name, 0) + 1
        worker.checkpoint()  # as every checkpoint_every seconds
        assert worker.call("beta")  # its checkpoint may or may not come before the kill
        worker.kill()  # mid-run: RunEnd never comes
        kept = exact_calls(store, agent, KEY)
        assert kept == unfolded(store, agent) and kept in (seen[agent], {**seen[agent], "beta": 3})
        seen[agent] = kept
    assert seen[a]["alpha"] == 4 and seen[a]["gamma"] == 1

    # what `priors show` says of it meanwhile: nothing folded, all of it in the journal
    cli = plugin_cli(PriorsPlugin())
    shown = CliRunner().invoke(cli, ["priors", "show", a, "--json", "--store", pg_url])
    assert shown.exit_code == 0, shown.output
    totals = {t["tool"]: (t["calls"], t["journal"], t["total"]) for t in json.loads(shown.output)["tools"]}
    assert totals == {name: (0, n, n) for name, n in seen[a].items()}

    # a run start of any process sweeps (here every time, and runs count as stale at once)
    rt = runtime(pg_url, "sweeper", events, journal_stale=TINY, sweep_every=0)
    await (await ClientRun(rt).start()).end()
    await rt.aclose()
    assert sum(e.calls for e in events.of(PriorsSwept)) >= 14
    for agent in (a, b):
        assert unfolded(store, agent) == {}
        assert exact_calls(store, agent, KEY) == seen[agent]
        doc = store.read(agent, KEY)
        assert doc is not None and doc["sessions"] == 1

    # a third process dies; `greenroom priors sweep` folds it; a second sweep finds nothing
    worker = Stepped(pg_url, a)
    assert worker.call("gamma") and worker.call("gamma")
    worker.checkpoint()
    worker.kill()
    for _ in range(2):
        swept = CliRunner().invoke(cli, ["priors", "sweep", "--store", pg_url, "--stale", "0"])
        assert swept.exit_code == 0 and "swept postgresql://" in swept.output, swept.output
        assert exact_calls(store, a, KEY) == {**seen[a], "gamma": 3}
    doc = store.read(a, KEY)
    assert doc is not None and doc["sessions"] == 2 and unfolded(store, a) == {}


def test_rows_of_swept_runs_are_forgotten_only_long_after(store: PostgresStore, agent_id: str) -> None:
    store.journal([JournalEntry(agent_id, "idle", 1, {"alpha": ToolTally(1, 1)})])
    report = store.sweep(KEY, TINY, lambda current, runs: {"runs": len(runs)})
    assert report.runs >= 1 and unfolded(store, agent_id) == {}
    store.journal([JournalEntry(agent_id, "idle", 2, {"alpha": ToolTally(2, 2)})])  # it was alive after all
    assert unfolded(store, agent_id) == {"alpha": 1}  # counted from where the sweep stopped
    store.sweep(KEY, TINY, lambda current, runs: {"runs": len(runs)})
    conn: Any = store._connection()  # two days later
    conn.execute(
        "UPDATE greenroom_usage_journal SET updated_at = now() - interval '2 days' WHERE agent_id = %s", (agent_id,)
    )
    assert store.sweep(KEY, 3600, lambda current, runs: {}).forgotten >= 1
    assert conn.execute("SELECT count(*) FROM greenroom_usage_journal WHERE agent_id = %s", (agent_id,)).fetchone() == (
        0,
    )


async def test_a_server_stopped_and_started_mid_run_loses_and_doubles_nothing(
    pg_url: str, store: PostgresStore, agent_id: str, events: Events, pg_ctl: PgCtl
) -> None:
    rt = runtime(pg_url, agent_id, events)
    plugin = priors_of(rt)
    client = await ClientRun(rt).start()
    assert not (await client.call("alpha")).is_error
    assert not (await client.call("alpha")).is_error
    await plugin.checkpoint()
    [ready] = await plugin.greenroom_readiness(runtime=rt) or []
    assert ready.ready and ready.name == f"priors store {redact(pg_url)}"
    pg_ctl.stop()
    for name in ("alpha", "beta", "beta"):
        assert not (await client.call(name)).is_error  # calls go on
        await plugin.checkpoint()  # each fails: the run's counts go to the spool
    warnings = [e.message for e in events.of(PluginWarning)]
    assert len(warnings) == 1 and f"is down: 1 call(s) of agent {agent_id!r} spooled in" in warnings[0]  # said once
    assert priors_of(rt)._stores[pg_url].spool.calls_of(agent_id) == 3
    [down] = await plugin.greenroom_readiness(runtime=rt) or []
    assert not down.ready and pg_url.split("@")[0].split(":")[-1] not in down.detail  # no password
    pg_ctl.start()
    assert not (await client.call("gamma")).is_error
    await plugin.checkpoint()  # the store is back: writes what the run counted
    [up] = await plugin.greenroom_readiness(runtime=rt) or []
    assert up.ready
    assert unfolded(store, agent_id) == {"alpha": 3, "beta": 2, "gamma": 1}
    await client.end()
    assert exact_calls(store, agent_id, KEY) == {"alpha": 3, "beta": 2, "gamma": 1}
    assert unfolded(store, agent_id) == {}
    await rt.aclose()


async def test_thirty_calls_across_a_stop_and_start_are_thirty(
    pg_url: str, store: PostgresStore, agent_id: str, pg_ctl: PgCtl
) -> None:
    # a gateway's calls, the server stopped after 10 and started again after 20; the runs
    # end while it is still taken for down (within RETRY_AFTER): nothing waits for it, the
    # runs go to the spool, and the next runtime to start a run (here, or in the next
    # process) saves them
    rt = runtime(pg_url, agent_id, checkpoint_calls=4)
    first, second = await ClientRun(rt).start(), await ClientRun(rt).start()
    names = ["alpha", "beta", "gamma"]
    for i in range(10):
        assert not (await (first, second)[i % 2].call(names[i % 3])).is_error
    pg_ctl.stop()
    for i in range(10, 20):
        assert not (await (first, second)[i % 2].call(names[i % 3])).is_error
    await priors_of(rt).checkpoint()  # fails: spooled
    pg_ctl.start()
    for i in range(20, 30):
        assert not (await (first, second)[i % 2].call(names[i % 3])).is_error
    await first.end()
    await second.end()
    await rt.aclose()
    assert sum(exact_calls(store, agent_id, KEY).values()) < 30  # some of them wait in the spool
    later = runtime(pg_url, agent_id)
    await (await ClientRun(later).start()).end()
    await later.aclose()
    assert exact_calls(store, agent_id, KEY) == {"alpha": 10, "beta": 10, "gamma": 10}
    assert unfolded(store, agent_id) == {}
    doc = store.read(agent_id, KEY)
    assert doc is not None and doc["sessions"] == 2


def test_a_restart_amid_a_stream_of_calls_leaves_exact_counts(
    pg_url: str, store: PostgresStore, agent_id: str, pg_ctl: PgCtl, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(keeper, "RETRY_AFTER", 0.0)  # a failed store is tried again at the next checkpoint
    before, after = threading.Event(), threading.Event()
    seen: dict[str, int] = {}
    errors: list[BaseException] = []

    events = Events()

    def stream() -> None:
        async def main() -> None:
            rt = runtime(pg_url, agent_id, events, checkpoint_calls=3)
            client = await ClientRun(rt).start()
            names = ["alpha", "beta", "gamma"]
            i = extra = 0
            while extra < 20:
                name = names[i % 3]
                if not (await client.call(name)).is_error:
                    seen[name] = seen.get(name, 0) + 1
                i += 1
                if i == 20:
                    before.set()  # 20 calls in: restart the server now
                extra += after.is_set()
            await client.end()
            await rt.aclose()

        try:
            anyio.run(main)
        except BaseException as exc:
            errors.append(exc)
            before.set()

    worker = threading.Thread(target=stream)
    worker.start()
    assert before.wait(120)
    pg_ctl.restart()
    after.set()
    worker.join(300)
    assert not errors, errors
    assert sum(seen.values()) >= 40
    # the checkpoints that met the restart failed (the calls stood), said once for the outage
    assert len(events.of(PluginWarning)) <= 1
    assert exact_calls(store, agent_id, KEY) == seen
    assert unfolded(store, agent_id) == {}
