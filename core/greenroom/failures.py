"""How a failure is named: ``PluginHookError`` (a plugin's hook raised) and ``RunFailure``
(why a run ended with an error, as data for plugins, traces and callers)."""

from __future__ import annotations

import sys

import attrs

if sys.version_info < (3, 11):
    from exceptiongroup import BaseExceptionGroup


EXITS: tuple[type[BaseException], ...] = (SystemExit, KeyboardInterrupt, GeneratorExit)
"""What a plugin or a tool may raise to leave rather than fail: from either, a failure of
its own (real Ctrl-C reaches greenroom through signal handlers, not plugin or tool code)."""

CONTAINED: tuple[type[BaseException], ...] = (Exception, *EXITS)
"""Everything a plugin's hook, import or constructor, or a tool, is contained for: it fails
itself, never the run or the process. Cancellation is not among them."""

MESSAGE_CHARS = 2_000
"""Most characters of an exception's own text a report quotes."""


def exception_text(exc: BaseException, limit: int = MESSAGE_CHARS) -> str:
    """An exception's text for a report: cut to ``limit`` characters, and never a second
    failure (a plugin's exception whose ``__str__`` raises still gets reported)."""
    try:
        text = str(exc)
    except Exception:
        return "<the exception's text could not be read>"
    if len(text) > limit:
        text = f"{text[:limit]}... [{len(text) - limit} more characters]"
    return text


class PluginHookError(Exception):
    """An exception raised inside a plugin's hook, with who raised it."""

    def __init__(self, plugin: str, distribution: str, hook: str, error: BaseException) -> None:
        self.plugin = plugin
        self.distribution = distribution
        self.hook = hook
        self.error = error
        self.reason = f"{type(error).__name__}: {exception_text(error)}"
        """The plugin's own exception, as ``Type: message`` (bounded)."""
        super().__init__(f"plugin {plugin!r} (distribution {distribution}) failed in hook {hook}: {self.reason}")


@attrs.frozen
class RunFailure:
    """Why a run ended with an error.

    ``error_type`` and ``message`` are the exception's class name and text (for a plugin
    failure, those of the exception the plugin raised); ``plugin``, ``distribution`` and
    ``hook`` name the plugin when one failed, and are None when the model or greenroom
    itself failed.
    """

    error_type: str
    message: str
    plugin: str | None = None
    distribution: str | None = None
    hook: str | None = None

    @classmethod
    def of(cls, exc: BaseException) -> RunFailure:
        if isinstance(exc, PluginHookError):
            return cls(type(exc.error).__name__, exception_text(exc.error), exc.plugin, exc.distribution, exc.hook)
        return cls(type(exc).__name__, exception_text(exc))


def first_error(exc: BaseException) -> BaseException:
    """The exception a user should see: the first leaf of an exception group (a task group
    wraps what its tasks raised), or ``exc`` itself."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc
