"""What ``/readyz`` answers: ``Runtime.readiness()``, every upstream MCP server listed (from
its cache or live) and none failing to start, and every plugin that implements
``greenroom_readiness`` saying what it needs is there (each bounded; one that fails is not
ready, named with its distribution: a probe fails closed).

Nothing here starts a server or waits on one. What the body says is for anyone who
reaches the port (a probe sends no token): names and short reasons, never an upstream's
error text, a command line or a secret; the log has the rest.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio

from greenroom import Readiness, Runtime

log = logging.getLogger("greenroom.serve.ops")


def as_json(check: Readiness) -> dict[str, Any]:
    """One check as ``/readyz`` shows it."""
    out: dict[str, Any] = {"name": check.name, "ready": check.ready}
    if check.detail:
        out["detail"] = check.detail
    if check.plugin is not None:
        out["plugin"] = check.plugin
        out["distribution"] = check.distribution or "?"
    return out


class ReadinessProbe:
    """Answers ``/readyz``: the checks, one run at a time (probes that come while one runs
    share its answer), and a line in the log when the answer changes."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._running: anyio.Event | None = None
        self._last: list[Readiness] = []
        self._was_ready: bool | None = None

    async def checks(self) -> list[Readiness]:
        if self._running is not None:
            await self._running.wait()
            return self._last
        self._running = done = anyio.Event()
        try:
            # shielded: the probes waiting on this one get its answer even if its own
            # prober leaves; it is bounded all the same (``Runtime.readiness``)
            with anyio.CancelScope(shield=True):
                found = await self._work_out()
            self._last = found
        finally:
            self._running = None
            done.set()
        ready = all(c.ready for c in found)
        if ready != self._was_ready:
            self._was_ready = ready
            lacking = ", ".join(c.name for c in found if not c.ready)
            if ready:
                log.info("ready")
            else:
                log.warning("not ready: %s", lacking)
        return found

    async def _work_out(self) -> list[Readiness]:
        try:
            return await self.runtime.readiness()
        except Exception as exc:  # greenroom's own failure: not ready, never a crash
            log.warning("readiness could not be worked out", exc_info=True)
            return [Readiness("gateway", False, f"readiness could not be worked out: {type(exc).__name__}")]


__all__ = ["ReadinessProbe", "as_json"]
