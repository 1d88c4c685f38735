"""What checking a config found: each finding with its level, file and dotted key path.

``greenroom.compose.build`` records findings while it builds a runtime for a check (a tool
whose schema is invalid, a server that has no cached listing, an extra this machine
lacks), and ``greenroom.compose.check`` adds what the build raised and what connecting
found. The level decides the exit code of ``greenroom config check``.
"""

from __future__ import annotations

import enum

import attrs

from greenroom.config import ConfigError, ConfigErrors


class Level(enum.Enum):
    """How bad a finding is, worst first."""

    ERROR = "error"
    """The config is wrong: ``run`` fails, or a tool it names cannot be used."""
    UNREACHABLE = "unreachable"
    """With ``--connect``: a server or a store could not be started or opened."""
    WARNING = "warning"
    """``run`` needs something this machine lacks (an extra, an API key), or a server's
    own listing is broken; the file itself is fine."""
    NOTE = "note"
    """Worth knowing, nothing to fix (a server that will be listed at first use)."""


EXIT_CODES = {Level.ERROR: 2, Level.UNREACHABLE: 1}
"""``greenroom config check`` exits 2 for a wrong config, 1 when only connecting failed."""


@attrs.frozen
class Finding:
    level: Level
    message: str
    file: str | None = None
    path: str = ""

    def __str__(self) -> str:
        where = ": ".join(p for p in (self.file or "", self.path) if p)
        return f"{where}: {self.message}" if where else self.message


@attrs.define
class Findings:
    """What one check found, in the order found. ``connect`` asks the build to start
    every server (and the check to open stores) instead of reading cached listings."""

    connect: bool = False
    items: list[Finding] = attrs.field(factory=list)

    def add(self, level: Level, message: str, *, file: str | None = None, path: str = "") -> None:
        self.items.append(Finding(level, message, file, path))

    def add_config_error(self, exc: ConfigError) -> None:
        for e in exc.errors if isinstance(exc, ConfigErrors) else [exc]:
            self.add(Level.ERROR, e.message, file=e.file, path=e.path)

    def at(self, level: Level) -> list[Finding]:
        return [f for f in self.items if f.level is level]

    @property
    def exit_code(self) -> int:
        return max((EXIT_CODES.get(f.level, 0) for f in self.items), default=0)


__all__ = ["EXIT_CODES", "Finding", "Findings", "Level"]
