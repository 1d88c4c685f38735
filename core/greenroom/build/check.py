"""Checking a config file: everything ``greenroom run`` checks, short of calling the model.

There is one code path: the runtime is built by ``build_runtime`` exactly as for a run,
with a ``Findings`` that records problems instead of stopping at the first, and starts
no MCP server (their cached listings are read). With ``connect`` the build starts and
lists every server, and RunStart runs once for every plugin, so a plugin opens what it
keeps outside the process (a profile store, say) and reports a failure as a run would;
then everything is closed. No model is ever called.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import attrs

from greenroom.build.findings import Findings, Level
from greenroom.config import ConfigError
from greenroom.events import Event, EventBus, PluginWarning
from greenroom.failures import PluginHookError
from greenroom.plugins.discovery import PluginRecord
from greenroom.runtime import Runtime


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
    from greenroom.build.compose import build_runtime

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
        if connect:
            anyio.run(_run_start, rt, bus, findings)
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


async def _run_start(rt: Runtime, bus: EventBus, findings: Findings) -> None:
    """RunStart (and what a first request would be) for every plugin, as a run begins:
    a warning a plugin emits, or an error it raises, is something it could not reach."""
    cfg = rt.config
    assert cfg is not None  # built from a file

    def where(plugin: str) -> tuple[str | None, str]:
        key = f"plugins.{plugin}"
        origin = cfg.origin(key) if plugin in cfg.plugin_sections else None
        return origin or cfg.files[-1], key

    def on_event(event: Event) -> None:
        if isinstance(event, PluginWarning):
            file, key = where(event.plugin)
            findings.add(Level.UNREACHABLE, f"{event.hook}: {event.message}", file=file, path=key)

    unsubscribe = bus.subscribe(on_event)
    try:
        await rt.preview()
    except PluginHookError as exc:
        file, key = where(exc.plugin)
        findings.add(Level.UNREACHABLE, str(exc), file=file, path=key)
    except Exception as exc:  # greenroom's own failure: named, never a traceback
        findings.add(Level.ERROR, f"RunStart failed: {type(exc).__name__}: {exc}", file=cfg.files[-1])
    finally:
        unsubscribe()


__all__ = ["CheckReport", "check_config"]
