"""What ``/readyz`` checks: every upstream MCP server is listed (from its cache or live) and
none is failing to start, and every plugin that implements ``greenroom_readiness`` says
what it needs is there.

Nothing here starts a server or waits on one: a server's state is read as it is. Each
plugin answers for itself, bounded by the agent's ``tool_timeout`` (the host's bound of
an implementation that waits); one that fails, answers past the bound or answers the
wrong shape is not ready, named with its distribution, and the others are still asked:
a probe fails closed. What the body says is for anyone who reaches the port (a probe
sends no token): names and short reasons, never an upstream's error text, a command
line or a secret; the log has the rest.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import anyio
import attrs

from greenroom._support.redact import redact_known
from greenroom.failures import PluginHookError
from greenroom.plugins.owners import attributing
from greenroom.plugins.readiness import Readiness

if TYPE_CHECKING:
    from greenroom.run.runtime import Runtime

log = logging.getLogger("greenroom.serve.ops")

HOOK = "greenroom_readiness"
MAX_TEXT = 200
"""Characters of a plugin's name or detail kept in the answer."""


@attrs.frozen
class Check:
    """One thing the gateway needs, and whether it is there now."""

    name: str
    ready: bool
    detail: str = ""
    plugin: str | None = None
    distribution: str | None = None

    def as_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "ready": self.ready}
        if self.detail:
            out["detail"] = self.detail
        if self.plugin is not None:
            out["plugin"] = self.plugin
            out["distribution"] = self.distribution or "?"
        return out


def upstream_checks(runtime: Runtime) -> list[Check]:
    """One check per upstream MCP server the policy leaves a tool of."""
    mcp = runtime.mcp
    if mcp is None:
        return []
    out = []
    for name, server in mcp.servers.items():
        if mcp.excluded(server) is not None:
            continue  # every tool of it is denied: it never starts, nothing waits on it
        what = f"mcp server {name}"
        # in back-off after a failed start: the server's last start failed (it keeps the
        # error until a start succeeds), or the first listing failed and none ran since
        last_failed = server.start_failed
        failing = not server.connected and (last_failed or (name in mcp.errors and server.starts == 0))
        if server.listing is None:
            why = "its start failed; it is tried again after a back-off" if failing else "it was never listed"
            out.append(Check(what, False, f"no listing: {why}"))
        elif failing:
            out.append(Check(what, False, "its last start failed; it is tried again after a back-off"))
        else:
            out.append(Check(what, True, "connected" if server.connected else "listed (from its cache)"))
    return out


async def plugin_checks(runtime: Runtime) -> list[Check]:
    """Each plugin's ``greenroom_readiness`` answer, one check per thing it names."""
    host = runtime.host
    if not host.has_impls(HOOK):
        return []
    bound = runtime.agent.tool_timeout
    failures: list[PluginHookError] = []
    with attributing() as answers, anyio.move_on_after(2 * bound + 1):
        # each implementation that waits is bounded by ``bound`` (the host's hook timeout);
        # this bound only catches one that would not stop when told
        _, failures = await host.call_each(HOOK, runtime=runtime)
    out: list[Check] = []
    heard: set[str] = set()
    for owner, answer in answers:
        if owner.hook != HOOK:
            continue
        heard.add(owner.plugin)
        try:
            out.extend(_checks_of(owner.plugin, owner.distribution, answer))
        except TypeError as exc:
            failures.append(PluginHookError(owner.plugin, owner.distribution, HOOK, exc))
    for failure in failures:
        heard.add(failure.plugin)
        log.warning("readiness: %s", failure)
        out.append(Check(f"plugin {failure.plugin}", False, _why(failure), failure.plugin, failure.distribution))
    for impl in getattr(host.hook, HOOK).get_hookimpls():
        if impl.plugin_name not in heard:  # cut by the outer bound
            detail = f"{HOOK} did not answer within {bound:g} s (the agent's tool_timeout)"
            out.append(Check(f"plugin {impl.plugin_name}", False, detail, impl.plugin_name))
    return out


def _checks_of(plugin: str, distribution: str, answer: Any) -> list[Check]:
    if answer is None:
        return []
    if isinstance(answer, (str, bytes, Mapping, Readiness)) or not isinstance(answer, Iterable):
        raise TypeError(f"returned {type(answer).__name__}; expected an iterable of Readiness or None")
    out = []
    for item in answer:
        if not isinstance(item, Readiness):
            raise TypeError(f"returned an item of type {type(item).__name__}; expected Readiness objects")
        name = _short(str(item.name)) or f"plugin {plugin}"
        out.append(Check(name, bool(item.ready), _short(str(item.detail or "")), plugin, distribution))
    return out


def _why(failure: PluginHookError) -> str:
    """What a failed answer shows: its kind, and a timeout's or a wrong shape's own words
    (greenroom wrote those); any other exception's text may quote a secret, so it is logged."""
    error = failure.error
    if isinstance(error, TimeoutError | TypeError):
        return _short(f"{HOOK} failed: {type(error).__name__}: {error}")
    return f"{HOOK} failed: {type(error).__name__} (the gateway's log says more)"


def _short(text: str) -> str:
    text = " ".join(redact_known(text).split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


class ReadinessProbe:
    """Answers ``/readyz``: the checks, one run at a time (probes that come while one runs
    share its answer), and a line in the log when the answer changes."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._running: anyio.Event | None = None
        self._last: list[Check] = []
        self._was_ready: bool | None = None

    async def checks(self) -> list[Check]:
        if self._running is not None:
            await self._running.wait()
            return self._last
        self._running = done = anyio.Event()
        try:
            # shielded: the probes waiting on this one get its answer even if its own
            # prober leaves; it is bounded all the same (see plugin_checks)
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

    async def _work_out(self) -> list[Check]:
        try:
            return upstream_checks(self.runtime) + await plugin_checks(self.runtime)
        except Exception as exc:  # greenroom's own failure: not ready, never a crash
            log.warning("readiness could not be worked out", exc_info=True)
            return [Check("gateway", False, f"readiness could not be worked out: {type(exc).__name__}")]


__all__ = ["HOOK", "Check", "ReadinessProbe", "plugin_checks", "upstream_checks"]
