"""The journal of calls (issues 26, 37), on the memory store (which keeps one like
PostgreSQL's, off unless ``journal = true``): a call's result never waits for the store,
its count is checkpointed behind it; RunEnd folds the run's rows; a failing store's counts
are spooled, said once, and saved when it is back; a sweep folds a dead run's calls
exactly once; sqlite stays as it was."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import pytest
from priors_testutil import ClientRun, Events, alpha, beta, broken, gamma

from greenroom import AgentConfig, EventBus, Plugin, Runtime, hookimpl
from greenroom.events import PluginWarning
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom_priors import KEY, MemoryStore, PriorsConfig, PriorsPlugin, StoreError, exact_calls
from greenroom_priors import keeper as keeper_module
from greenroom_priors.events import PriorsSaved
from greenroom_priors.journal import PriorsSwept

pytestmark = pytest.mark.anyio

TINY = 1e-6  # journal_stale: any run that wrote before the sweep is stale


class Flaky(MemoryStore):
    """A memory store a fleet would share (journal on by default) that fails on demand."""

    journal_by_default = True

    def __init__(self, name: str) -> None:
        super().__init__(name)
        self.down = False
        self.writes = self.pings = 0
        self.gate: threading.Event | None = None  # set: a journal write waits for it
        self.entered = threading.Event()

    def _check(self) -> None:
        if self.down:
            raise StoreError("flaky://: the database is restarting")

    def journal(self, entries: Any) -> None:
        self.entered.set()
        if self.gate is not None:
            assert self.gate.wait(30)
        self._check()
        self.writes += 1
        super().journal(entries)

    def read(self, agent_id: str, key: str) -> Any:
        self._check()
        return super().read(agent_id, key)

    def finish_run(self, agent_id: str, key: str, run_id: str, change: Any) -> Any:
        self._check()
        return super().finish_run(agent_id, key, run_id, change)

    def ping(self) -> None:
        self.pings += 1
        self._check()


class FlakyStores(Plugin):
    name = "flaky-stores"

    def __init__(self) -> None:
        super().__init__()
        self.opened: dict[str, Flaky] = {}

    @hookimpl
    def greenroom_profile_stores(self) -> dict[str, Any]:
        def factory(url: str) -> Flaky:
            return self.opened.setdefault(url, Flaky(url.partition("://")[2]))

        return {"flaky": factory}


@pytest.fixture
def shelf() -> Iterator[str]:
    name = f"j{uuid.uuid4().hex[:8]}"
    yield name
    MemoryStore.forget(name)


def priors_of(rt: Runtime) -> PriorsPlugin:
    return next(p for p in rt.host.pm.get_plugins() if isinstance(p, PriorsPlugin))


@pytest.fixture
def retry_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """A store that failed is tried again at its next use (not RETRY_AFTER seconds later)."""
    monkeypatch.setattr(keeper_module, "RETRY_AFTER", 0.0)


def runtime(events: Events, *plugins: Plugin, agent: str = "agent", **config: Any) -> Runtime:
    bus = EventBus()
    bus.subscribe(events)
    host = make_plugin_host(records=[], extra=[PriorsPlugin(PriorsConfig(**config)), *plugins])
    tools = [alpha, beta, gamma, broken]
    return Runtime(model=ScriptedModel([]), tools=tools, host=host, agent=AgentConfig(id=agent), events=bus)


def journal_of(name: str, agent: str = "agent") -> dict[str, int]:
    return MemoryStore(name).journal_counts(agent, KEY)[1]


def calls_in_document(name: str, agent: str = "agent") -> dict[str, int]:
    doc = MemoryStore(name).read(agent, KEY)
    return {} if doc is None else {n: e["calls"] for n, e in doc["tools"].items() if e["calls"]}


async def test_calls_are_checkpointed_behind_their_results_and_folded_at_run_end(shelf: str, events: Events) -> None:
    rt = runtime(events, store=f"memory://{shelf}", journal=True)
    client = await ClientRun(rt).start()
    assert not (await client.call("alpha")).is_error
    await client.call("beta")
    await client.call("alpha")
    assert (await client.call("broken")).is_error
    assert journal_of(shelf) == {}  # the results came back before any write: it comes behind them
    await priors_of(rt).checkpoint()  # as every checkpoint_every seconds
    assert journal_of(shelf) == {"alpha": 2, "beta": 1}  # a failed call is not counted
    await client.call("gamma")
    await client.end()
    assert journal_of(shelf) == {}  # folded, and its rows marked so, together
    assert calls_in_document(shelf) == {"alpha": 2, "beta": 1, "gamma": 1}
    assert exact_calls(MemoryStore(shelf), "agent", KEY) == {"alpha": 2, "beta": 1, "gamma": 1}
    assert MemoryStore(shelf).read("agent", KEY)["sessions"] == 1  # type: ignore[index]
    assert len(events.of(PriorsSaved)) == 1
    await rt.aclose()


async def test_a_call_returns_while_the_store_is_stuck(events: Events) -> None:
    stores = FlakyStores()
    rt = runtime(events, stores, store="flaky://stuck", checkpoint_calls=1)
    client = await ClientRun(rt).start()
    flaky = stores.opened["flaky://stuck"]
    flaky.gate = threading.Event()  # every journal write hangs until the test lets it go
    assert not (await client.call("alpha")).is_error
    assert await anyio.to_thread.run_sync(flaky.entered.wait, 30)  # the checkpoint is stuck in the store
    for name in ("beta", "alpha", "gamma"):
        assert not (await client.call(name)).is_error  # and the calls come back all the same
    assert not flaky.gate.is_set() and flaky.writes == 0
    assert not events.of(PluginWarning)  # not a store timeout either: no call waited for the store
    flaky.gate.set()
    await client.end()
    assert exact_calls(flaky, "agent", KEY) == {"alpha": 2, "beta": 1, "gamma": 1}
    await rt.aclose()


async def test_auto_leaves_memory_and_sqlite_stores_as_they_were(shelf: str, events: Events, tmp_path: Path) -> None:
    rt = runtime(events, store=f"memory://{shelf}")  # journal = "auto"
    client = await ClientRun(rt).start()
    await client.call("alpha")
    assert journal_of(shelf) == {}  # no journal: folded at RunEnd only
    await client.end()
    assert calls_in_document(shelf) == {"alpha": 1}
    url = f"sqlite://{tmp_path / 'p.sqlite3'}"
    rt2 = runtime(events, store=url)
    client = await ClientRun(rt2).start()
    await client.call("alpha")
    await client.call("broken")
    await client.end()
    from greenroom_priors import SqliteStore

    doc = SqliteStore.from_url(url).read("agent", KEY)
    assert doc is not None and {n: e["calls"] for n, e in doc["tools"].items()} == {"alpha": 1, "broken": 1}
    assert not events.of(PluginWarning)
    await rt.aclose()
    await rt2.aclose()


async def test_journal_true_on_sqlite_is_said_and_the_run_goes_on(events: Events, tmp_path: Path) -> None:
    rt = runtime(events, store=f"sqlite://{tmp_path / 'p.sqlite3'}", journal=True)
    client = await ClientRun(rt).start()
    assert not (await client.call("alpha")).is_error
    await client.end()
    [warning] = events.of(PluginWarning)
    assert "keeps no journal of calls: journal = true needs a store that does" in warning.message
    assert events.of(PriorsSaved)  # saved at RunEnd as without a journal
    await rt.aclose()


def test_journal_takes_auto_true_or_false() -> None:
    assert PriorsConfig(journal=False).journal is False
    with pytest.raises(ValueError, match="journal: expected \"auto\", true or false, got 'yes'"):
        PriorsConfig(journal="yes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="journal: expected"):
        PriorsConfig(journal=1)  # type: ignore[arg-type]


async def test_a_failing_store_spools_the_counts_says_so_once_and_saves_them_later(events: Events) -> None:
    stores = FlakyStores()
    rt = runtime(events, stores, store="flaky://f1")
    client = await ClientRun(rt).start()
    await client.call("alpha")
    await priors_of(rt).checkpoint()
    flaky = stores.opened["flaky://f1"]
    flaky.down = True
    for name in ("alpha", "beta", "alpha"):
        assert not (await client.call(name)).is_error  # the call stands for its client
        await priors_of(rt).checkpoint()  # fails, and spools the run's counts
    assert flaky.journal_counts("agent", KEY)[1] == {"alpha": 1}
    [warning] = events.of(PluginWarning)  # once for the outage, not once a checkpoint
    assert warning.hook == "greenroom_after_tool_execute"
    assert "flaky://f1 is down: 1 call(s) of agent 'agent' spooled in" in warning.message  # the first alpha is in
    assert "saved when it is back" in warning.message
    spool = priors_of(rt)._stores["flaky://f1"].spool
    assert len(spool.files()) == 1 and spool.calls_of("agent") == 3  # what the store lacks
    flaky.down = False
    await client.call("gamma")
    await priors_of(rt).checkpoint()
    assert flaky.journal_counts("agent", KEY)[1] == {"alpha": 3, "beta": 1, "gamma": 1}  # caught up in one write
    assert spool.files() == []
    await client.end()
    assert exact_calls(flaky, "agent", KEY) == {"alpha": 3, "beta": 1, "gamma": 1}
    assert flaky.journal_counts("agent", KEY)[1] == {}
    await rt.aclose()


async def test_a_run_whose_save_failed_is_spooled_and_saved_later(events: Events, retry_at_once: None) -> None:
    stores = FlakyStores()
    rt = runtime(events, stores, store="flaky://f2")
    client = await ClientRun(rt).start()
    await client.call("alpha")
    await client.call("beta")
    flaky = stores.opened["flaky://f2"]
    flaky.down = True
    await client.call("alpha")
    await client.end()  # the save fails: the run is spooled
    message = events.of(PluginWarning)[-1].message
    assert "3 call(s) of agent 'agent' spooled in" in message and "saved when it is back" in message
    assert flaky.read is not None and flaky.journal_counts("agent", KEY) == (None, {})
    flaky.down = False
    await (await ClientRun(rt).start()).end()  # the next run start saves it
    assert exact_calls(flaky, "agent", KEY) == {"alpha": 2, "beta": 1}
    assert flaky.journal_counts("agent", KEY)[1] == {}
    # and when the runtime closes first: its last checkpoint saves it
    client = await ClientRun(rt).start()
    await client.call("gamma")
    flaky.down = True
    await client.end()
    flaky.down = False
    await rt.aclose()
    assert exact_calls(flaky, "agent", KEY) == {"alpha": 2, "beta": 1, "gamma": 1}


async def test_a_run_saved_again_from_the_spool_counts_once(events: Events) -> None:
    # a process killed between the store's commit and the spool file's removal saves the
    # run again at the next start: the journal's rows make that count nothing twice
    stores = FlakyStores()
    rt = runtime(events, stores, store="flaky://f3")
    client = await ClientRun(rt).start()
    await client.call("alpha")
    await client.call("alpha")
    flaky = stores.opened["flaky://f3"]
    flaky.down = True
    await client.end()
    spool = priors_of(rt)._stores["flaky://f3"].spool
    [path] = spool.files()
    kept = path.read_bytes()
    flaky.down = False
    assert spool.replay(flaky)[:2] == (1, 2)
    path.write_bytes(kept)  # as if the file had not been removed
    assert spool.replay(flaky)[:2] == (1, 2) and spool.files() == []
    assert exact_calls(flaky, "agent", KEY) == {"alpha": 2}
    assert flaky.read("agent", KEY)["sessions"] == 1  # type: ignore[index]
    await rt.aclose()


async def test_a_sweep_folds_a_dead_run_once(shelf: str, events: Events) -> None:
    url = f"memory://{shelf}"
    dead = runtime(events, store=url, journal=True)
    client = await ClientRun(dead).start()
    for name in ("alpha", "alpha", "beta"):
        await client.call(name)
    await priors_of(dead).checkpoint()
    # its process dies here: the run never ends
    other = runtime(events, store=url, journal=True, journal_stale=TINY, sweep_every=0)
    await (await ClientRun(other).start()).end()  # its run start sweeps
    [swept] = events.of(PriorsSwept)
    assert (swept.runs, swept.agents, swept.calls) == (1, 1, 3)
    assert journal_of(shelf) == {} and calls_in_document(shelf) == {"alpha": 2, "beta": 1}
    doc = MemoryStore(shelf).read("agent", KEY)
    assert doc is not None and doc["sessions"] == 1  # the dead run, as one session
    assert doc["tools"]["alpha"]["p"] == pytest.approx(2 / 3)  # called in 2 of its 3 steps
    await (await ClientRun(other).start()).end()  # a second sweep finds nothing left
    assert len(events.of(PriorsSwept)) == 1 and calls_in_document(shelf) == {"alpha": 2, "beta": 1}
    await other.aclose()


async def test_a_swept_run_that_lives_on_is_counted_once(shelf: str, events: Events) -> None:
    url = f"memory://{shelf}"
    rt = runtime(events, store=url, journal=True)
    client = await ClientRun(rt).start()
    await client.call("alpha")
    await client.call("beta")
    await priors_of(rt).checkpoint()
    sweeper = runtime(events, store=url, journal=True, journal_stale=TINY, sweep_every=0)
    await (await ClientRun(sweeper).start()).end()  # takes the idle run for dead
    assert calls_in_document(shelf) == {"alpha": 1, "beta": 1}
    await client.call("alpha")  # it was only idle
    await priors_of(rt).checkpoint()
    assert exact_calls(MemoryStore(shelf), "agent", KEY) == {"alpha": 2, "beta": 1}
    await client.end()
    assert exact_calls(MemoryStore(shelf), "agent", KEY) == {"alpha": 2, "beta": 1}
    assert journal_of(shelf) == {}
    await rt.aclose()
    await sweeper.aclose()


async def test_readiness_of_a_store_with_a_journal_and_of_a_file(shelf: str, events: Events, tmp_path: Path) -> None:
    plugin = PriorsPlugin(PriorsConfig(store=f"memory://{shelf}"))
    rt = Runtime(model=ScriptedModel([]), tools=[alpha], host=make_plugin_host(records=[], extra=[plugin]))
    [ready] = await plugin.greenroom_readiness(runtime=rt) or [None]
    assert ready is not None and ready.ready and ready.name == f"priors store memory://{shelf}"
    file_plugin = PriorsPlugin(PriorsConfig(store=f"sqlite://{tmp_path / 'p.sqlite3'}"))
    assert await file_plugin.greenroom_readiness(runtime=rt) is None
    assert await PriorsPlugin().greenroom_readiness(runtime=rt) is None  # the default file
    await rt.aclose()


async def test_readiness_of_a_store_that_just_failed_answers_without_waiting(events: Events) -> None:
    stores = FlakyStores()
    rt = runtime(events, stores, store="flaky://r1")
    client = await ClientRun(rt).start()
    await client.call("alpha")
    flaky = stores.opened["flaky://r1"]
    flaky.down = True
    await client.end()  # the store fails
    [answer] = await priors_of(rt).greenroom_readiness(runtime=rt) or [None]
    assert answer is not None and not answer.ready and answer.detail.startswith("flaky://: the database is restarting")
    assert flaky.pings == 0  # from what the store's keeper knows: not asked again
    await rt.aclose()


def test_fully_folded_rows_are_forgotten_a_day_after_their_run_went_silent(shelf: str) -> None:
    from greenroom_priors import ToolTally, fold_runs
    from greenroom_priors.journal import JournalEntry

    store = MemoryStore(shelf)

    def change(current: Any, runs: Any) -> Any:
        return fold_runs(current, runs, now="2025-01-01T00:00:00Z", floor=0.1, where="test")

    store.journal([JournalEntry("agent", "r1", 2, {"alpha": ToolTally(2, 2)})])
    assert store.sweep(KEY, TINY, change).runs == 1
    assert store.sweep(KEY, TINY, change).forgotten == 0  # kept: the run may only be idle
    start = store.clock()
    store.clock = lambda: start + 86400 + 1
    assert store.sweep(KEY, TINY, change).forgotten == 1
    assert exact_calls(store, "agent", KEY) == {"alpha": 2}


def test_config_check_refuses_journal_true_on_sqlite(tmp_path: Path) -> None:
    from greenroom.compose.check import check_config
    from greenroom.compose.findings import Level

    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    cfg = tmp_path / "agent.toml"
    cfg.write_text(
        '[agent]\nmodel = "scripted:script.jsonl"\n[plugins.priors-persistence]\n'
        'store = "sqlite://p.sqlite3"\njournal = true\n'
    )
    [found] = check_config(cfg).findings.at(Level.ERROR)
    assert found.path == "plugins.priors-persistence.journal" and "an SQLite file keeps none" in found.message
    cfg.write_text('[agent]\nmodel = "scripted:script.jsonl"\n[plugins.priors-persistence]\njournal = "yes"\n')
    [found] = check_config(cfg).findings.at(Level.ERROR)
    assert "plugins.priors-persistence.journal" in f"{found.path} {found.message}"


def test_a_broken_document_keeps_its_runs_in_the_journal_and_the_others_are_swept(shelf: str) -> None:
    from greenroom_priors import ToolTally, fold_runs
    from greenroom_priors.journal import JournalEntry

    store = MemoryStore(shelf)
    store.update("bad", KEY, lambda current: {"format": "someone else's"})

    def change(current: Any, runs: Any) -> Any:
        return fold_runs(current, runs, now="2025-01-01T00:00:00Z", floor=0.1, where=f"agent {runs[0].agent_id}")

    store.journal([JournalEntry(a, "r1", 1, {"alpha": ToolTally(1, 1)}) for a in ("bad", "good")])
    report = store.sweep(KEY, TINY, change)
    assert (report.runs, report.agents, report.refused) == (1, 1, 1)
    assert exact_calls(store, "good", KEY) == {"alpha": 1}
    assert store.journal_counts("bad", KEY)[1] == {"alpha": 1}  # left for after a reset


def test_priors_sweep_takes_the_store_and_the_bound_from_a_config(shelf: str, tmp_path: Path) -> None:
    from support.gr_testutil import plugin_cli
    from typer.testing import CliRunner

    from greenroom_priors import ToolTally
    from greenroom_priors.journal import JournalEntry

    MemoryStore(shelf).journal([JournalEntry("agent", "r1", 2, {"alpha": ToolTally(2, 1)})])
    (tmp_path / "script.jsonl").write_text('{"text": "done"}\n')
    cfg = tmp_path / "agent.toml"
    section = f'[plugins.priors-persistence]\nstore = "memory://{shelf}"\njournal_stale = 0.000001\n'
    cfg.write_text('[agent]\nmodel = "scripted:script.jsonl"\n' + section)
    cli = plugin_cli(PriorsPlugin())
    swept = CliRunner().invoke(cli, ["priors", "sweep", "--config", str(cfg)])
    assert swept.exit_code == 0, swept.output
    assert "deprecated" not in swept.output
    assert f"swept memory://{shelf}: folded 1 run(s) of 1 agent(s), 2 call(s)" in swept.output
    assert calls_in_document(shelf) == {"alpha": 2} and journal_of(shelf) == {}
    cfg.write_text('[agent]\nmodel = "scripted:script.jsonl"\n[plugins.priors-persistence]\nstore = "sqlite://p.db"\n')
    refused = CliRunner().invoke(cli, ["priors", "sweep", "--config", str(cfg)])
    assert refused.exit_code == 2 and "keeps no journal of calls: nothing to sweep" in refused.output
    # the config as an argument, as before --config, still works, with a word that it is deprecated
    old_form = CliRunner().invoke(cli, ["priors", "sweep", str(cfg)])
    assert old_form.exit_code == 2 and "keeps no journal of calls: nothing to sweep" in old_form.output
    assert "'greenroom priors sweep CONFIG' is deprecated: use 'greenroom priors sweep --config CONFIG'" in " ".join(
        old_form.output.split()
    )
    both = CliRunner().invoke(cli, ["priors", "sweep", str(cfg), "--config", str(cfg)])
    assert both.exit_code == 2 and "give the config once, with --config" in both.output


async def test_a_runs_counts_live_in_the_run_and_the_plugin_keeps_nothing_of_it(shelf: str, events: Events) -> None:
    from greenroom_priors.ledger import RunLedger

    rt = runtime(events, store=f"memory://{shelf}", journal=True)
    plugin = priors_of(rt)

    def sizes() -> dict[str, int]:
        """How much the plugin holds: its containers, and those of the objects it holds."""
        out = {}
        for name, value in vars(plugin).items():
            for sub, inner in [("", value), *vars(value).items()] if hasattr(value, "__dict__") else [("", value)]:
                if hasattr(inner, "__len__") and not isinstance(inner, str):
                    out[f"{name}.{sub}"] = len(inner)
        return out

    await (await ClientRun(rt).start()).end()  # the runtime's store is open
    before = sizes()
    clients = [await ClientRun(rt).start() for _ in range(3)]
    for i, client in enumerate(clients):
        for _ in range(i + 1):
            await client.call("alpha")
    assert [c.run.ctx.state[RunLedger].calls for c in clients] == [{"alpha": 1}, {"alpha": 2}, {"alpha": 3}]
    assert sizes() == before  # one runtime serves many runs: nothing of theirs sits on the plugin
    for client in clients:
        await client.end()
    assert sizes() == before
    assert exact_calls(MemoryStore(shelf), "agent", KEY) == {"alpha": 6}
    await rt.aclose()
