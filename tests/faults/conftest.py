"""The fault suite's workbench: an agent folder per test (its config, its model's script,
the suite's tools), ``greenroom run`` on it in process (typer's CliRunner) or as a real
process (where a signal or a second process is the point), and what a run left behind
read back: exit code, output, the trace and the saved session.

Every case checks the same three things, so they live here: how the run ended (exit code
and stop reason), that the trace's last line is ``run_end`` saying so, and that every
tool call in the saved session has exactly one result.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from greenroom.cli import app

HERE = Path(__file__).resolve().parent
TOOLS = HERE / "fault_tools.py"
LOG_SERVER = HERE / "log_server.py"
# only the plugins a config enables run: an installed plugin must not change what a case sees
ENV = {"COLUMNS": "300", "GREENROOM_DISABLE_PLUGIN_AUTOLOAD": "1"}
SLOW_START = 60.0  # seconds a real process may take to reach the point a test waits for


@dataclass
class Run:
    """What one ``greenroom run`` left behind."""

    exit_code: int
    stdout: str
    stderr: str
    trace: list[dict[str, Any]]
    session_file: Path

    @property
    def output(self) -> str:
        return self.stdout + self.stderr

    def ended(self, stop_reason: str, exit_code: int) -> dict[str, Any]:
        """Check the run ended as said, in the exit code and in the trace's last line
        (``run_end``), without a traceback; return that line."""
        assert self.exit_code == exit_code, self.output
        assert "Traceback" not in self.output and "ExceptionGroup" not in self.output, self.output
        assert self.kinds().count("run_start") == self.kinds().count("run_end") == 1, self.output
        end = self.trace[-1]
        assert end["kind"] == "run_end" and end["stop_reason"] == stop_reason, end
        return end

    def kinds(self) -> list[str]:
        return [r["kind"] for r in self.trace]

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [r for r in self.trace if r["kind"] == kind]

    def session(self) -> dict[str, Any]:
        doc: dict[str, Any] = json.loads(self.session_file.read_text(encoding="utf-8"))
        return doc

    def messages(self) -> list[dict[str, Any]]:
        """The saved session's messages, after checking every tool call in it has
        exactly one result (what every provider needs to resume it)."""
        messages: list[dict[str, Any]] = self.session()["messages"]
        asked = [c["id"] for m in messages if m["role"] == "assistant" for c in m.get("tool_calls") or ()]
        answered = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
        assert sorted(asked) == sorted(answered), messages
        return messages

    def results(self) -> dict[str, dict[str, Any]]:
        """The saved session's tool results by tool name."""
        return {m["name"]: m for m in self.messages() if m["role"] == "tool"}


@dataclass
class Bench:
    """One test's agent folder, and runs of ``greenroom run`` in it."""

    folder: Path
    env: dict[str, str] = field(default_factory=dict)
    runs: int = 0

    @property
    def session_file(self) -> Path:
        return self.folder / "session.json"

    def agent(
        self,
        turns: Sequence[Mapping[str, Any]] = (),
        *,
        model: str | None = None,
        agent_id: str = "a",
        settings: Mapping[str, Any] | None = None,
        plugins: Sequence[str] = (),
        tools: Sequence[str] = ("TOOLS",),
        catalogs: Sequence[str] = (),
        extra: str = "",
        name: str = "agent",
    ) -> Path:
        """Write ``name.toml``: an agent with the suite's ``tools`` (lists in
        ``fault_tools.py``) and ``catalogs`` (files beside it) whose scripted model plays
        ``turns`` (or the ``model`` given), with ``settings`` in ``[agent]`` and the
        ``plugins`` enabled."""
        self.folder.mkdir(parents=True, exist_ok=True)
        if model is None:
            (self.folder / f"{name}.jsonl").write_text("".join(json.dumps(t) + "\n" for t in turns))
            model = f"scripted:{name}.jsonl"
        keys = {"id": agent_id, "model": model, **(settings or {})}
        lines = ["[agent]", *(f"{k} = {json.dumps(v)}" for k, v in keys.items())]
        lines += ["[tools]", f"python = {json.dumps([f'{TOOLS}:{t}' for t in tools])}"]
        lines += [f"catalogs = {json.dumps([str(HERE / c) for c in catalogs])}"]
        lines += ["[plugins]", f"enable = {json.dumps(['scripted', *plugins])}"]
        config = self.folder / f"{name}.toml"
        config.write_text("\n".join(lines) + "\n" + extra)
        return config

    def next_trace(self) -> Path:
        self.runs += 1
        return self.folder / f"trace-{self.runs}.jsonl"

    def run(
        self,
        config: Path,
        text: str,
        *options: str | Path,
        quiet: bool = True,
        env: Mapping[str, str] | None = None,
    ) -> Run:
        """``greenroom run CONFIG TEXT --trace T --session S`` in this process: with ``-q``
        (only the answer on stdout) unless ``quiet`` is false (the live view)."""
        trace = self.next_trace()
        args = ["run", config, text, "--trace", trace, "--session", self.session_file, *options]
        args += ["-q"] if quiet else []
        done = CliRunner().invoke(app, [str(a) for a in args], env={**ENV, **self.env, **(env or {})})
        if done.exception is not None and not isinstance(done.exception, SystemExit):
            raise done.exception  # a crash of the test's own making, with its traceback
        return Run(done.exit_code, done.stdout, done.stderr, read_trace(trace), self.session_file)

    def start(self, config: Path, text: str, *options: str | Path, env: Mapping[str, str] | None = None) -> Started:
        """The same run as a real process, for signals and for a second process."""
        trace = self.next_trace()
        args = [
            "run",
            str(config),
            text,
            "--trace",
            str(trace),
            "--session",
            str(self.session_file),
            *map(str, options),
        ]
        proc = subprocess.Popen(
            [sys.executable, "-m", "greenroom.cli", *args],
            cwd=self.folder,
            env={**os.environ, **ENV, **self.env, **(env or {})},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        return Started(proc, trace, self.session_file)


@dataclass
class Started:
    """A ``greenroom run`` running as its own process."""

    proc: subprocess.Popen[str]
    trace: Path
    session_file: Path

    def when_file_appears(self, marker: Path) -> None:
        """Wait until ``marker`` exists: the process reached the point that writes it."""
        deadline = time.monotonic() + SLOW_START
        while not marker.exists():
            if self.proc.poll() is not None:
                out, err = self.proc.communicate()
                pytest.fail(f"the run ended (exit {self.proc.returncode}) before writing {marker.name}:\n{out}{err}")
            assert time.monotonic() < deadline, f"{marker.name} never appeared"
            time.sleep(0.02)  # polls a file another process writes: no event crosses the boundary

    def when_trace_has(self, kind: str, tool: str) -> None:
        """Wait until the run's trace holds a ``kind`` event for ``tool`` (its line is written
        when the event happens)."""
        deadline = time.monotonic() + SLOW_START

        def seen() -> bool:
            try:
                events = read_trace(self.trace)
            except ValueError:  # the last line is being written
                return False
            return any(e.get("kind") == kind and e.get("tool") == tool for e in events)

        while not seen():
            assert self.proc.poll() is None, f"the run ended before its trace had {kind} of {tool}"
            assert time.monotonic() < deadline, f"the trace never had {kind} of {tool}"
            time.sleep(0.02)  # polls a file another process writes: no event crosses the boundary

    def finish(self) -> Run:
        out, err = self.proc.communicate(timeout=SLOW_START)
        return Run(self.proc.returncode, out, err, read_trace(self.trace), self.session_file)


def read_trace(path: Path) -> list[dict[str, Any]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


@pytest.fixture
def bench(tmp_path: Path) -> Bench:
    return Bench(tmp_path / "agent")


@pytest.fixture
def log_server() -> str:
    """The ``[[tools.mcp]]`` table of ``log_server.py`` (eager, named ``logs``)."""
    pytest.importorskip("mcp_types", reason="needs the MCP SDK 2.x: pip install 'greenroom[mcp]'")
    table = {"name": "logs", "command": sys.executable, "args": [str(LOG_SERVER)], "defer": False}
    return "[[tools.mcp]]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in table.items())


@pytest.fixture(scope="session")
def fault_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A site folder holding the ``faulty`` plugin as an installed distribution: its
    module and a hand-written dist-info with its entry point (importlib.metadata reads it
    from any folder on the path, so nothing is installed anywhere)."""
    site = tmp_path_factory.mktemp("fault-site")
    shutil.copy(HERE / "fault_plugin.py", site / "greenroom_fault_plugin.py")
    info = site / "greenroom_fault_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: greenroom-fault-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[greenroom.plugins]\nfaulty = greenroom_fault_plugin:Faulty\n")
    return site


@pytest.fixture
def faulty(fault_site: Path, bench: Bench, monkeypatch: pytest.MonkeyPatch) -> Bench:
    """The bench with the ``faulty`` plugin installed, for runs in process and as processes."""
    monkeypatch.syspath_prepend(str(fault_site))
    bench.env["PYTHONPATH"] = os.pathsep.join(p for p in (str(fault_site), os.environ.get("PYTHONPATH")) if p)
    return bench
