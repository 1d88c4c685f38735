"""Subprocess for the concurrency tests: run N sessions of a real Runtime with the
priors plugin against one store URL. Usage: worker_sessions.py URL AGENT N WORKER."""

from __future__ import annotations

import sys

import anyio
from priors_testutil import alpha, beta  # this script's folder is first on sys.path

from greenroom import AgentConfig, Runtime
from greenroom.models import ModelRequest
from greenroom.plugins.discovery import make_plugin_host
from greenroom.providers.scripted import PolicyModel
from greenroom_priors import PriorsConfig, PriorsPlugin


def policy(request: ModelRequest) -> dict[str, object]:
    # step 1 calls alpha (and beta in odd workers' sessions), step 2 answers:
    # every session has 2 steps, so alpha's presence is always 0.5
    if request.messages[-1].role == "user":
        calls = [{"name": "alpha", "arguments": {"x": 1}}]
        if WORKER % 2:
            calls.append({"name": "beta", "arguments": {"text": "b"}})
        return {"tool_calls": calls}
    return {"text": "done"}


async def main(url: str, agent: str, n: int) -> None:
    # no decay: beta's prior must not depend on which worker's session folded in last
    plugin = PriorsPlugin(PriorsConfig(store=url, on_store_error="raise", decay_unused=False))
    rt = Runtime(
        model=PolicyModel(policy),
        tools=[alpha, beta],
        host=make_plugin_host(records=[], extra=[plugin]),
        agent=AgentConfig(id=agent),
    )
    try:
        for _ in range(n):
            outcome = await rt.session().run("go")
            assert outcome.stop_reason == "final", outcome
    finally:
        await rt.aclose()


if __name__ == "__main__":
    WORKER = int(sys.argv[4])
    anyio.run(main, sys.argv[1], sys.argv[2], int(sys.argv[3]))
