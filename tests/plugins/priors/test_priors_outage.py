"""A store that is down loses no call (issue 37): what a run could not save waits in the
spool, in the state folder, and is saved when the store is back, by the same process or
the next one; ``priors show`` counts it and ``priors sweep`` saves it. Through the
``greenroom run`` and ``greenroom serve`` commands with PostgreSQL stopped and started,
and with an SQLite file that another process holds locked."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from priors_testutil import SCRIPT_3_STEPS, Events, PgCtl, call
from support.gr_testutil import plugin_cli
from typer.testing import CliRunner

from greenroom import Runtime
from greenroom.events import PluginWarning
from greenroom_priors import (
    KEY,
    MemoryStore,
    PostgresStore,
    PriorsConfig,
    PriorsPlugin,
    SqliteStore,
    ToolTally,
    exact_calls,
)
from greenroom_priors import spool as spool_module
from greenroom_priors.spool import Spool, SpooledRun

pytestmark = pytest.mark.anyio

TOOLS_PY = '''
from greenroom import tool


@tool
def alpha(x: int) -> int:
    """Return x."""
    return x


TOOLS = [alpha]
'''


def cli(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "greenroom.cli", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=120
    )


def shown(url: str, agent: str, env: dict[str, str]) -> tuple[int, int]:
    """What ``priors show --json`` says of the agent's calls: stored, and waiting in the spool."""
    done = cli("priors", "show", agent, "--json", "--store", url, env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    return sum(t.get("total", t["calls"]) for t in data["tools"]), data["spooled"]


def test_a_cli_run_during_an_outage_is_spooled_and_the_next_run_saves_it(
    pg_url: str, pg_ctl: PgCtl, tmp_path: Path, agent_id: str
) -> None:
    (tmp_path / "tools.py").write_text(TOOLS_PY)
    turns = [call("alpha"), {"tool_calls": [{"name": "alpha", "arguments": {"x": 2}}] * 2}, {"text": "done"}]
    (tmp_path / "turns.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
    (tmp_path / "agent.toml").write_text(
        f'[agent]\nid = "{agent_id}"\nmodel = "scripted:turns.jsonl"\n[tools]\npython = ["tools.py:TOOLS"]\n'
        f'[plugins.priors-persistence]\nstore = "{pg_url}"\n'
    )
    env = {**os.environ, "GREENROOM_HOME": str(tmp_path / "home"), "COLUMNS": "400"}
    pg_ctl.stop()
    first = cli("run", "agent.toml", "go", env=env, cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert f"3 call(s) of agent {agent_id!r} spooled in {tmp_path / 'home' / 'priors-spool'}" in first.stderr
    assert "saved when it is back" in first.stderr
    pg_ctl.start()
    assert shown(pg_url, agent_id, env) == (0, 3)  # `priors show` says they wait
    second = cli("run", "agent.toml", "again", env=env, cwd=tmp_path)  # another process
    assert second.returncode == 0, second.stderr
    store = PostgresStore(pg_url)
    assert exact_calls(store, agent_id, KEY) == {"alpha": 6}  # its own three, and the spooled three
    doc = store.read(agent_id, KEY)
    store.close()
    assert doc is not None and doc["sessions"] == 2
    assert shown(pg_url, agent_id, env) == (6, 0)


@pytest.mark.slow
async def test_thirty_calls_through_a_gateway_across_a_stop_and_start_are_thirty(
    pg_url: str, pg_ctl: PgCtl, tmp_path: Path, agent_id: str
) -> None:
    from mcp.client.client import Client
    from support.serve_testutil import HttpGateway, hold_config

    home = tmp_path / "home"
    extra = f'[plugins.priors-persistence]\nstore = "{pg_url}"\ncheckpoint_calls = 5\n'
    env = {**os.environ, "GREENROOM_HOME": str(home)}
    gateway = HttpGateway(hold_config(tmp_path, extra, agent_id=agent_id), env={"GREENROOM_HOME": str(home)})
    try:
        async with Client(gateway.url, mode="2026-07-28") as client:
            for i in range(30):
                if i == 10:
                    pg_ctl.stop()
                if i == 20:
                    pg_ctl.start()
                result = await client.call_tool("echo", {"text": str(i)})
                assert not result.is_error, result  # no call waits for the store or fails with it
    finally:
        assert gateway.stop() == 0  # its runs end: saved, or spooled while it takes the store for down
    stored, spooled = shown(pg_url, agent_id, env)
    assert stored + spooled == 30  # every call is in one place or the other
    swept = cli("priors", "sweep", "--store", pg_url, "--stale", "3600", env=env)
    assert swept.returncode == 0, swept.stderr
    assert shown(pg_url, agent_id, env) == (30, 0)
    store = PostgresStore(pg_url)
    assert exact_calls(store, agent_id, KEY) == {"echo": 30}
    store.close()


async def test_a_locked_sqlite_file_spools_the_run_and_this_process_or_the_next_saves_it(
    build: Callable[..., Runtime], events: Events, tmp_path: Path
) -> None:
    path = tmp_path / "p.sqlite3"
    url = f"sqlite://{path}?timeout=0.2"
    SqliteStore.from_url(url).update("agent", KEY, lambda current: _empty())  # the file exists
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
    rt = build(SCRIPT_3_STEPS * 3, config=PriorsConfig(store=url))
    plugin = next(p for p in rt.host.pm.get_plugins() if isinstance(p, PriorsPlugin))
    await rt.session().run("one")
    [warning] = events.of(PluginWarning)
    assert warning.hook == "greenroom_run_end" and "the priors database stayed locked" in warning.message
    assert "3 call(s) of agent 'agent' spooled in" in warning.message
    holder.execute("ROLLBACK")
    await plugin.checkpoint()  # this process: its next checkpoint
    assert calls_of(url) == (1, {"alpha": 2, "beta": 1}) and Spool(url).files() == []
    await rt.session().run("two")  # the store is back for this runtime: saved at once
    assert calls_of(url) == (2, {"alpha": 4, "beta": 2}) and len(events.of(PluginWarning)) == 1
    holder.execute("BEGIN IMMEDIATE")
    await rt.session().run("three")  # spooled again
    holder.execute("ROLLBACK")
    holder.close()
    await rt.aclose()  # taken for down still: its last checkpoint leaves it in the spool
    assert len(Spool(url).files()) == 1
    later = build(SCRIPT_3_STEPS, config=PriorsConfig(store=url))  # the next process, in effect
    await later.session().run("four")
    assert calls_of(url) == (4, {"alpha": 8, "beta": 4}) and Spool(url).files() == []
    await later.aclose()


def calls_of(url: str) -> tuple[int, dict[str, int]]:
    store = SqliteStore.from_url(url)
    doc = store.read("agent", KEY)
    store.close()
    assert doc is not None
    return doc["sessions"], {name: e["calls"] for name, e in doc["tools"].items()}


def _empty() -> dict[str, Any]:
    return {"format": "greenroom.priors/1", "sessions": 0, "updated": None, "tools": {}}


def test_priors_show_counts_the_spool_and_sweep_saves_it(tmp_path: Path) -> None:
    url = f"sqlite://{tmp_path / 'p.sqlite3'}"
    tally = {"alpha": ToolTally(2, 0)}
    run = SpooledRun("a", "r1", 2, tally, False, ended=True, presence={"alpha": 1.0}, now="2025-01-01T00:00:00Z")
    Spool(url).write([run])
    app = plugin_cli(PriorsPlugin())
    shown = CliRunner().invoke(app, ["priors", "show", "a", "--store", url])
    assert shown.exit_code == 0, shown.output
    assert "2 call(s) of a wait in the spool" in shown.output
    swept = CliRunner().invoke(app, ["priors", "sweep", "--store", url])
    assert swept.exit_code == 0 and "saved 1 spooled run(s), 2 call(s)" in swept.output, swept.output
    doc = SqliteStore.from_url(url).read("a", KEY)
    assert doc is not None and doc["tools"]["alpha"]["calls"] == 2 and Spool(url).files() == []
    nothing = CliRunner().invoke(app, ["priors", "sweep", "--store", url])
    assert nothing.exit_code == 2 and "nothing waits in its spool" in nothing.output


def test_the_spool_is_bounded_and_keeps_a_broken_file_aside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spool = Spool(f"memory://{uuid.uuid4().hex[:8]}", root=tmp_path)
    monkeypatch.setattr(spool_module, "MAX_RUNS", 2)
    monkeypatch.setattr(spool_module, "MAX_BYTES", 2000)
    many = frozenset(f"tool_{i}" for i in range(500))
    runs = [SpooledRun("a", f"r{i}", 1, {"alpha": ToolTally(1, 1)}, journal=True, available=many) for i in range(3)]
    spool.write(runs[:2])
    spool.write(runs[:2])  # the same runs again: replaced, not added
    with pytest.raises(OSError, match="holds 2 runs, the most it keeps"):
        spool.write(runs[2:])
    assert [run.available for _, run in spool.read()] == [None, None]  # dropped to stay small; the calls kept
    spool.files()[0].write_text("{not json")
    store = MemoryStore()
    assert spool.replay(store)[:2] == (1, 1)
    assert spool.files() == [] and len(list(spool.folder.glob("*.bad"))) == 1
