"""Helpers for the fleet tests and ``benchmarks/serve_fleet.py``: the local fleet of
deploy/local/fleet.py (replicas behind HAProxy), a gateway config over real upstream
servers with a shared PostgreSQL priors store, and MCP clients that keep calling through
the balancer and count what they saw."""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import anyio
import attrs
import pytest

ROOT = Path(__file__).resolve().parents[2]
FLEET_PY = ROOT / "deploy" / "local" / "fleet.py"
PG_ENV = "GREENROOM_TEST_POSTGRES_URL"
DISPATCH = "deferred_tool_call"
NOW = {"tool_name": "time__get_current_time", "arguments": {"timezone": "UTC"}}


def load_fleet() -> Any:
    """deploy/local/fleet.py as a module (it is a script, not a package)."""
    spec = importlib.util.spec_from_file_location("greenroom_local_fleet", FLEET_PY)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def needs_fleet() -> str:
    """The PostgreSQL URL the fleet shares; skips (fails in CI) without it or HAProxy."""
    url = os.environ.get(PG_ENV, "")
    missing = [what for what, there in (("HAProxy", shutil.which("haproxy")), ("PostgreSQL", url)) if not there]
    if missing:
        why = f"needs {' and '.join(missing)}: .ci/run installs HAProxy and starts PostgreSQL (.ci/postgres.sh)"
        if os.environ.get("GREENROOM_CI") or os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
    return url


def fleet_config(folder: Path, agent_id: str, extra: str = "") -> Path:
    """A gateway over the reference time server, deferred (dispatch), priors in the
    shared store named by ``GREENROOM_PRIORS_URL``."""
    path = folder / "fleet.toml"
    path.write_text(
        f'[agent]\nid = "{agent_id}"\nmodel = "anthropic:claude-sonnet-4-5"\n\n'
        f'[[tools.mcp]]\nname = "time"\ncommand = {sys.executable!r}\n'
        'args = ["-m", "mcp_server_time", "--local-timezone", "UTC"]\n\n'
        '[plugins.deferred-tools]\nstrategy = "dispatch"\n\n'
        '[plugins.priors-persistence]\nstore = "${GREENROOM_PRIORS_URL}"\n' + extra,
        encoding="utf-8",
    )
    return path


@attrs.define
class Tally:
    """What clients saw: calls that succeeded (by real tool name), and errors."""

    ok: Counter[str] = attrs.field(factory=Counter)
    errors: list[str] = attrs.field(factory=list)
    latencies: list[float] = attrs.field(factory=list)

    @property
    def succeeded(self) -> int:
        return sum(self.ok.values())


async def caller(
    url: str,
    calls: int,
    tally: Tally,
    *,
    mode: str = "2026-07-28",
    name: str = "fleet-client",
    on_call: Any = None,
    bound: float = 60.0,
) -> None:
    """One client (named ``name``, as real clients name themselves) making ``calls``
    dispatched calls of ``time__get_current_time``; a failure (a cut connection, a
    session the replica that held it took with it) is counted and the client connects
    again, as a real client would."""
    import mcp_types
    from mcp.client.client import Client

    me = mcp_types.Implementation(name=name, version="1")
    done = 0
    while done < calls:
        try:
            async with Client(url, mode=mode, client_info=me) as client:  # type: ignore[arg-type]
                while done < calls:
                    started = time.perf_counter()
                    with anyio.fail_after(bound):
                        result = await client.call_tool(DISPATCH, NOW)
                    done += 1
                    if result.is_error:
                        tally.errors.append("error result: " + str(result.content)[:200])
                    else:
                        tally.ok["time__get_current_time"] += 1
                        tally.latencies.append(time.perf_counter() - started)
                    if on_call is not None:
                        await on_call()
        except Exception as exc:  # seen by the client: an error, then a new connection
            done += 1
            tally.errors.append(f"{type(exc).__name__}: {exc}"[:200])
