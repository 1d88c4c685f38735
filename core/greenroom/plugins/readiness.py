"""Whether a long-lived process can serve: ``Readiness``, one per thing checked, and
``plugin_readiness``, every plugin's ``greenroom_readiness`` answer (``Runtime.readiness``
adds the upstream MCP servers').

Each plugin answers for itself, bounded by the agent's ``tool_timeout`` (the host's bound
of an implementation that waits); one that fails, answers past the bound or answers the
wrong shape is not ready, named with its distribution, and the others are still asked:
a probe fails closed. What a check says may be shown to anyone who reaches a probe:
names and short reasons, never an exception's own text (it may quote a secret) nor a
secret greenroom knows; the log has the rest.
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

if TYPE_CHECKING:
    from greenroom.plugins.host import PluginHost

log = logging.getLogger("greenroom.plugins")

HOOK = "greenroom_readiness"
MAX_TEXT = 200
"""Characters of a plugin's name or detail kept."""


@attrs.frozen
class Readiness:
    """One thing a plugin needs in order to serve, and whether it is there now."""

    name: str
    """What was checked, in the operator's terms (``priors store postgresql://db/agents``),
    never with a secret in it."""
    ready: bool
    detail: str = ""
    """Why not (or what was seen), in a sentence without secrets."""
    plugin: str | None = None
    """The plugin that answered (greenroom sets it; None for what greenroom checks itself)."""
    distribution: str | None = None
    """That plugin's distribution (greenroom sets it)."""


async def plugin_readiness(host: PluginHost, runtime: object, bound: float) -> list[Readiness]:
    """Each plugin's ``greenroom_readiness(runtime)`` answer, one check per thing it
    names, each implementation bounded by ``bound`` seconds."""
    if not host.has_impls(HOOK):
        return []
    failures: list[PluginHookError] = []
    with attributing() as answers, anyio.move_on_after(2 * bound + 1):
        # each implementation that waits is bounded by ``bound`` (the host's hook timeout);
        # this bound only catches one that would not stop when told
        _, failures = await host.call_each(HOOK, runtime=runtime)
    out: list[Readiness] = []
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
        out.append(Readiness(f"plugin {failure.plugin}", False, _why(failure), failure.plugin, failure.distribution))
    for impl in getattr(host.hook, HOOK).get_hookimpls():
        if impl.plugin_name not in heard:  # cut by the outer bound
            detail = f"{HOOK} did not answer within {bound:g} s (the agent's tool_timeout)"
            out.append(Readiness(f"plugin {impl.plugin_name}", False, detail, impl.plugin_name))
    return out


def _checks_of(plugin: str, distribution: str, answer: Any) -> list[Readiness]:
    if answer is None:
        return []
    if isinstance(answer, (str, bytes, Mapping, Readiness)) or not isinstance(answer, Iterable):
        raise TypeError(f"returned {type(answer).__name__}; expected an iterable of Readiness or None")
    out = []
    for item in answer:
        if not isinstance(item, Readiness):
            raise TypeError(f"returned an item of type {type(item).__name__}; expected Readiness objects")
        name = _short(str(item.name)) or f"plugin {plugin}"
        out.append(Readiness(name, bool(item.ready), _short(str(item.detail or "")), plugin, distribution))
    return out


def _why(failure: PluginHookError) -> str:
    """What a failed answer shows: its kind, and a timeout's or a wrong shape's own words
    (greenroom wrote those); any other exception's text may quote a secret, so it is logged."""
    error = failure.error
    if isinstance(error, TimeoutError | TypeError):
        return _short(f"{HOOK} failed: {type(error).__name__}: {error}")
    return f"{HOOK} failed: {type(error).__name__} (the log says more)"


def _short(text: str) -> str:
    text = " ".join(redact_known(text).split())
    return text if len(text) <= MAX_TEXT else text[: MAX_TEXT - 3] + "..."


__all__ = ["Readiness", "plugin_readiness"]
