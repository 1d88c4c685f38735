"""Configuration errors: what was wrong, in which file, at which dotted key path."""

from __future__ import annotations

from collections.abc import Sequence


class ConfigError(ValueError):
    """A configuration problem: where it is and what was expected."""

    def __init__(self, message: str, *, file: str | None = None, path: str = "") -> None:
        self.file = file
        self.path = path
        self.message = message
        where = ": ".join(p for p in (file or "", path) if p)
        super().__init__(f"{where}: {message}" if where else message)


class ConfigErrors(ConfigError):
    """Several configuration problems, reported together."""

    def __init__(self, errors: Sequence[ConfigError]) -> None:
        self.errors = list(errors)
        first = self.errors[0]
        super().__init__(first.message, file=first.file, path=first.path)

    def __str__(self) -> str:
        return "\n".join(str(ConfigError(e.message, file=e.file, path=e.path)) for e in self.errors)


class UnsetVariableError(ConfigError):
    """A ``${VAR}`` whose environment variable is not set (and has no default)."""
