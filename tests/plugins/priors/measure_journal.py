"""What the journal of calls costs a call: client calls through one gateway-style run
(each call a step, as ``greenroom serve`` makes them), against one PostgreSQL store with
the journal off and on, and against an SQLite file (no journal), in one process, the
arms interleaved round by round. Prints each arm's median and p95 per call and the ratio
of the journal's median to the same store without it; then the calls per second of
CLIENTS runs calling at once in one runtime (a busy gateway), journal off and on, where
calls that queue behind a commit share the next one.

    GREENROOM_TEST_POSTGRES_URL=... python tests/plugins/priors/measure_journal.py [CALLS] [ROUNDS] [CLIENTS]
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

import anyio

sys.path.insert(0, str(Path(__file__).resolve().parent))

from priors_testutil import ClientRun, alpha, beta, gamma

from greenroom import AgentConfig, Runtime
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom_priors import PriorsConfig, PriorsPlugin


def runtime(url: str, agent: str, journal: bool | str) -> Runtime:
    plugin = PriorsPlugin(PriorsConfig(store=url, journal=journal))  # type: ignore[arg-type]
    host = make_plugin_host(records=[], extra=[plugin])
    return Runtime(model=ScriptedModel([]), tools=[alpha, beta, gamma], host=host, agent=AgentConfig(id=agent))


async def timed_calls(rt: Runtime, calls: int) -> list[float]:
    client = await ClientRun(rt).start()
    times = []
    for i in range(calls):
        started = time.perf_counter()
        result = await client.call(("alpha", "beta", "gamma")[i % 3])
        times.append(time.perf_counter() - started)
        assert not result.is_error
    await client.end()
    return times


async def throughput(rt: Runtime, clients: int, calls: int) -> float:
    """Calls per second of ``clients`` runs calling at once, ``calls`` each."""
    runs = [await ClientRun(rt).start() for _ in range(clients)]

    async def one(client: ClientRun) -> None:
        for i in range(calls):
            assert not (await client.call(("alpha", "beta", "gamma")[i % 3])).is_error

    started = time.perf_counter()
    async with anyio.create_task_group() as tg:
        for client in runs:
            tg.start_soon(one, client)
    elapsed = time.perf_counter() - started
    for client in runs:
        await client.end()
    return clients * calls / elapsed


async def main(calls: int, rounds: int, clients: int) -> None:
    pg = os.environ["GREENROOM_TEST_POSTGRES_URL"]
    folder = tempfile.mkdtemp()
    agent = f"measure-{uuid.uuid4().hex[:8]}"
    arms = {
        "postgresql, journal off": runtime(pg, agent, False),
        "postgresql, journal on": runtime(pg, agent, "auto"),
        "sqlite (no journal)": runtime(f"sqlite://{folder}/p.sqlite3", agent, "auto"),
    }
    for rt in arms.values():  # warm up: connections, imports, the first run's listing
        await timed_calls(rt, 10)
    times: dict[str, list[float]] = {name: [] for name in arms}
    for _ in range(rounds):
        for name, rt in arms.items():
            times[name] += await timed_calls(rt, calls)
    rates: dict[str, list[float]] = {name: [] for name in arms if name.startswith("postgresql")}
    for _ in range(rounds):
        for name in rates:
            rates[name].append(await throughput(arms[name], clients, max(1, calls // clients)))
    for rt in arms.values():
        await rt.aclose()
    medians = {name: statistics.median(t) for name, t in times.items()}
    for name, t in times.items():
        p95 = statistics.quantiles(t, n=20)[-1]
        print(f"{name:26} {len(t):5} calls  median {medians[name] * 1000:7.3f} ms  p95 {p95 * 1000:7.3f} ms")
    ratio = medians["postgresql, journal on"] / medians["postgresql, journal off"]
    extra = (medians["postgresql, journal on"] - medians["postgresql, journal off"]) * 1000
    print(f"journal on / off (median per call): {ratio:.2f}x, +{extra:.3f} ms a call")
    best = {name: statistics.median(r) for name, r in rates.items()}
    for name, rate in best.items():
        print(f"{name:26} {clients} clients at once: {rate:8.0f} calls/s (median of {rounds})")
    share = best["postgresql, journal on"] / best["postgresql, journal off"]
    print(f"journal on / off ({clients} clients at once): {share:.2f}x the calls/s")


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:4]]
    anyio.run(main, *args, *[200, 5, 20][len(args) :])
