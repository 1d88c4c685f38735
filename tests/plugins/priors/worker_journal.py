"""Subprocess for the journal tests: a gateway's client runs against one store URL.

``worker_journal.py URL AGENT runs N CALLS``: N client runs, each calling the tools named
in CALLS (comma-separated) in turn, then ended; prints the successful calls.
``worker_journal.py URL AGENT stepped``: one client run that makes one call per line
read from standard input (a tool name) and prints ``ok NAME`` once its result is back
(what a client would see), or, for the line ``checkpoint``, checkpoints (as the interval
would) and prints ``checkpointed``; it never ends its run (the test kills it).
"""

from __future__ import annotations

import sys

import anyio
from priors_testutil import ClientRun, alpha, beta, gamma  # this script's folder is first on sys.path

from greenroom import AgentConfig, Runtime
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import ScriptedModel
from greenroom_priors import PriorsConfig, PriorsPlugin


def runtime(url: str, agent: str) -> Runtime:
    plugin = PriorsPlugin(PriorsConfig(store=url, on_store_error="raise"))
    host = make_plugin_host(records=[], extra=[plugin])
    return Runtime(model=ScriptedModel([]), tools=[alpha, beta, gamma], host=host, agent=AgentConfig(id=agent))


async def runs(url: str, agent: str, n: int, calls: list[str]) -> None:
    rt = runtime(url, agent)
    ok = 0
    try:
        for _ in range(n):
            client = await ClientRun(rt).start()
            for name in calls:
                ok += not (await client.call(name)).is_error
            await client.end()
    finally:
        await rt.aclose()
    print(ok, flush=True)


async def stepped(url: str, agent: str) -> None:
    rt = runtime(url, agent)
    client = await ClientRun(rt).start()
    print("started", flush=True)
    for line in sys.stdin:
        name = line.strip()
        if name == "checkpoint":
            plugin = next(p for p in rt.host.pm.get_plugins() if isinstance(p, PriorsPlugin))
            await plugin.checkpoint()
            print("checkpointed", flush=True)
            continue
        result = await client.call(name)
        print(f"{'error' if result.is_error else 'ok'} {name}", flush=True)


if __name__ == "__main__":
    url, agent, mode = sys.argv[1:4]
    if mode == "runs":
        anyio.run(runs, url, agent, int(sys.argv[4]), sys.argv[5].split(","))
    else:
        anyio.run(stepped, url, agent)
