"""Subprocess for the crash test: save priors back to back, forever, printing the
session count after each commit, until it is killed. Usage: worker_crash.py URL AGENT."""

from __future__ import annotations

import sys

from greenroom_priors import KEY, fold_document, open_store
from greenroom_priors.stores import builtin_factories


def observation(session: int):  # type: ignore[no-untyped-def]
    """A deterministic observation per session number, so a reader can recompute the
    document for any session count and tell a torn write from a whole one."""
    from greenroom_priors import Observation

    names = [f"tool_{i:03d}" for i in range(200)]
    used = {names[(session * 7 + k) % 200]: ((session + k) % 10 + 1) / 10 for k in range(12)}
    return Observation(presence=used, counts={n: 1 + session % 3 for n in used})


def main(url: str, agent: str) -> None:
    store = open_store(url, builtin_factories())
    while True:

        def change(current):  # type: ignore[no-untyped-def]
            n = current["sessions"] if current else 0
            return fold_document(current, observation(n), now=f"t{n}")

        doc = store.update(agent, KEY, change)
        print(doc["sessions"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
