"""Checking a config file: everything ``greenroom run`` checks, short of calling the model.

There is one code path: the runtime is built by ``build_runtime`` exactly as for a run,
with a ``Findings`` that records problems instead of stopping at the first, and starts
no MCP server (their cached listings are read). Then every plugin checks its own part
of the config (``greenroom_check_config``: a store URL whose scheme no plugin provides,
say), each at the dotted key it names. With ``connect`` the build starts and lists every
server, and RunStart runs once for every plugin, so a plugin opens what it keeps outside
the process (a profile store, say) and reports a failure as a run would; then everything
is closed. No model is ever called.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
import attrs

from greenroom.compose.findings import Findings, Level
from greenroom.config import ConfigError, ConfigErrors, RuntimeConfig
from greenroom.events import Event, EventBus, PluginWarning
from greenroom.failures import PluginHookError
from greenroom.plugins.discovery import PluginRecord
from greenroom.plugins.owners import attributing
from greenroom.run.runtime import Runtime

CHECK_HOOK = "greenroom_check_config"


@attrs.frozen
class CheckReport:
    """What a check found, and what it built when it got that far."""

    path: str
    findings: Findings
    files: tuple[str, ...] = ()
    plugins: tuple[str, ...] = ()
    tools: int = 0
    groups: int = 0

    @property
    def exit_code(self) -> int:
        return self.findings.exit_code

    def summary(self) -> str:
        """The line a check that found no error prints."""
        plugins = ", ".join(self.plugins) or "none"
        return (
            f"{self.path} ({len(self.files)} file(s), plugins: {plugins}; {self.tools} tool(s), {self.groups} group(s))"
        )


def check_config(
    path: str | Path, *, connect: bool = False, records: Sequence[PluginRecord] | None = None
) -> CheckReport:
    """Build the runtime of ``path`` as a run would, record every problem, close it."""
    from greenroom.compose.build import build_runtime

    findings = Findings(connect=connect)
    bus = EventBus()
    try:
        rt = build_runtime(path, events=bus, records=records, check=findings)
    except ConfigError as exc:
        findings.add_config_error(exc)
        return CheckReport(str(path), findings)
    except Exception as exc:  # what a run reports the same way: named, not a traceback
        findings.add(Level.ERROR, f"{type(exc).__name__}: {exc}", file=str(path))
        return CheckReport(str(path), findings)
    try:
        anyio.run(_check, rt, bus, findings)
    finally:
        anyio.run(rt.aclose)
    cfg = rt.config
    assert cfg is not None  # built from a file
    return CheckReport(
        str(path),
        findings,
        files=tuple(cfg.files),
        plugins=tuple(sorted(name for name, _ in rt.host.pm.list_name_plugin())),
        tools=len(rt.user_tool_names),
        groups=len(rt.groups),
    )


async def _check(rt: Runtime, bus: EventBus, findings: Findings) -> None:
    await _plugin_checks(rt, findings)
    if findings.connect:
        await _run_start(rt, bus, findings)


def _section(cfg: RuntimeConfig, plugin: str) -> tuple[str | None, str]:
    """Where a plugin's problem is: its section, in the file that wrote it (else the last file)."""
    key = f"plugins.{plugin}"
    origin = cfg.origin(key) if plugin in cfg.plugin_sections else None
    return origin or cfg.files[-1], key


async def _plugin_checks(rt: Runtime, findings: Findings) -> None:
    """Each plugin's ``greenroom_check_config``: what it answers is an error at the key it
    names; a plugin whose check fails (a raise, an answer of the wrong shape) is an error
    naming it, at its section, and every other plugin's check still runs."""
    cfg = rt.config
    assert cfg is not None  # built from a file
    try:
        with attributing() as answers:
            _, failures = await rt.host.call_each(CHECK_HOOK, config=cfg, runtime=rt)
    except Exception as exc:  # greenroom's own failure: named, never a traceback
        findings.add(Level.ERROR, f"{CHECK_HOOK} failed: {type(exc).__name__}: {exc}", file=cfg.files[-1])
        return
    for owner, answer in answers:
        if owner.hook != CHECK_HOOK or answer is None:  # None: nothing to report
            continue
        file, key = _section(cfg, owner.plugin)
        try:
            errors = _config_errors(answer)
        except TypeError as exc:
            failures.append(PluginHookError(owner.plugin, owner.distribution, owner.hook, exc))
            continue
        for e in errors:
            path = e.path or key
            findings.add(Level.ERROR, e.message, file=e.file or cfg.origin(path) or file, path=path)
    for failure in failures:
        file, key = _section(cfg, failure.plugin)
        findings.add(Level.ERROR, str(failure), file=file, path=key)


def _config_errors(answer: Any) -> list[ConfigError]:
    """The errors in a ``greenroom_check_config`` answer (a ``ConfigErrors`` counts as each
    of its errors); a TypeError for anything but an iterable of ``ConfigError``."""
    if isinstance(answer, (str, bytes, Mapping, ConfigError)) or not isinstance(answer, Iterable):
        raise TypeError(f"returned {_shown(answer)}; expected an iterable of ConfigError or None")
    out: list[ConfigError] = []
    for item in answer:
        if not isinstance(item, ConfigError):
            raise TypeError(f"returned an item {_shown(item)}; expected ConfigError objects")
        out.extend(item.errors if isinstance(item, ConfigErrors) else [item])
    return out


def _shown(value: Any) -> str:
    text = repr(value)
    return f"of type {type(value).__name__} ({text[:77] + '...' if len(text) > 80 else text})"


async def _run_start(rt: Runtime, bus: EventBus, findings: Findings) -> None:
    """RunStart (and what a first request would be) for every plugin, as a run begins:
    a warning a plugin emits, or an error it raises, is something it could not reach."""
    cfg = rt.config
    assert cfg is not None  # built from a file

    def on_event(event: Event) -> None:
        if isinstance(event, PluginWarning):
            file, key = _section(cfg, event.plugin)
            findings.add(Level.UNREACHABLE, f"{event.hook}: {event.message}", file=file, path=key)

    unsubscribe = bus.subscribe(on_event)
    try:
        await rt.preview()
    except PluginHookError as exc:
        file, key = _section(cfg, exc.plugin)
        findings.add(Level.UNREACHABLE, str(exc), file=file, path=key)
    except Exception as exc:  # greenroom's own failure: named, never a traceback
        findings.add(Level.ERROR, f"RunStart failed: {type(exc).__name__}: {exc}", file=cfg.files[-1])
    finally:
        unsubscribe()


__all__ = ["CheckReport", "check_config"]
