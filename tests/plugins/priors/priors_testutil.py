"""Helpers shared by the priors test modules (conftest puts this folder on sys.path)."""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from greenroom import tool
from greenroom.events import Event

HERE = Path(__file__).resolve().parent
PG_ENV = "GREENROOM_TEST_POSTGRES_URL"


def postgres_url() -> str:
    url = os.environ.get(PG_ENV, "")
    if not url:
        pytest.skip(
            f"{PG_ENV} is not set: start a throwaway server with "
            f'eval "$(bash .ci/postgres.sh)" to run the PostgreSQL tests'
        )
    return url


@tool
def alpha(x: int) -> int:
    """Return x."""
    return x


@tool
def beta(text: str) -> str:
    """Echo text."""
    return text


@tool
def gamma() -> str:
    """Say hi."""
    return "hi"


TOOLS = [alpha, beta, gamma]


def call(*names: str) -> dict[str, Any]:
    """A scripted model turn calling the named tools."""
    args = {"alpha": {"x": 1}, "beta": {"text": "t"}, "gamma": {}}
    return {"tool_calls": [{"name": n, "arguments": args[n]} for n in names]}


SCRIPT_3_STEPS = [call("alpha"), call("alpha", "beta"), {"text": "done"}]


class Events:
    """Collects every event of a runtime."""

    def __init__(self) -> None:
        self.items: list[Event] = []

    def __call__(self, event: Event) -> None:
        self.items.append(event)

    def of(self, cls: type) -> list[Any]:
        return [e for e in self.items if isinstance(e, cls)]


def run_script(script: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(HERE / script), *args], capture_output=True, text=True, timeout=timeout, check=False
    )


@tool
def broken() -> str:
    """Always fails."""
    raise RuntimeError("broken on purpose")


class ClientRun:
    """A gateway's run (``greenroom serve``): each call a client makes is one step."""

    def __init__(self, rt: Any) -> None:
        from greenroom import RunKind

        self.run = rt.start_run(rt.session(), kind=RunKind.CLIENT)

    async def start(self) -> ClientRun:
        await self.run.start()
        await self.run.next_request()
        return self

    async def call(self, name: str) -> Any:
        """One client call; its result, once every hook has seen it (what the client gets)."""
        args = {"alpha": {"x": 1}, "beta": {"text": "t"}}.get(name, {})
        call = self.run.take_client_call(name, args)
        result = await self.run.call_tool(call)
        await self.run.next_request()
        return result

    async def end(self) -> None:
        await self.run.end(self.run.outcome_of("final"))


class PgCtl:
    """Stop, start and restart the throwaway server of ``.ci/postgres.sh``, with the
    pg_ctl, data folder and user its ``GREENROOM_TEST_POSTGRES_STOP`` line names."""

    def __init__(self, stop_line: str) -> None:
        tokens = shlex.split(stop_line.split(";")[0])
        at = next(i for i, t in enumerate(tokens) if t.endswith("pg_ctl"))
        self.prefix, self.pg_ctl = tokens[:at], tokens[at]
        self.data = Path(tokens[tokens.index("-D") + 1])
        self.log = self.data.parent / "server.log"

    @classmethod
    def from_env(cls) -> PgCtl:
        line = os.environ.get("GREENROOM_TEST_POSTGRES_STOP", "")
        if "pg_ctl" not in line or " -D " not in line:
            pytest.skip("GREENROOM_TEST_POSTGRES_STOP does not name pg_ctl and a data folder (.ci/postgres.sh)")
        return cls(line)

    def _run(self, *args: str) -> None:
        command = [*self.prefix, self.pg_ctl, "-D", str(self.data), "-l", str(self.log), *args]
        # the server keeps no pipe of ours open: its output goes to the log file
        subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True, timeout=120)

    def stop(self) -> None:
        self._run("-m", "fast", "-w", "stop")

    def start(self) -> None:
        # the options it was first started with (port, address, socket folder), but -D
        opts = shlex.split((self.data / "postmaster.opts").read_text())[1:]
        at = opts.index("-D")
        del opts[at : at + 2]
        self._run("-w", "-t", "60", "-o", " ".join(shlex.quote(o) for o in opts), "start")

    def restart(self) -> None:
        self._run("-m", "fast", "-w", "-t", "60", "restart")
