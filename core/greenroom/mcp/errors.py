"""MCP errors and the words they use: which server, its command or URL, and the real cause.

Messages name a server by its config name and its command or URL, never by env or
header values (``greenroom._support.redact`` removes those from text greenroom did not write).
"""

from __future__ import annotations

import shlex
import sys

import anyio

from greenroom._support.redact import public_url
from greenroom.config import McpServerConfig

if sys.version_info >= (3, 11):
    _BaseExceptionGroup = BaseExceptionGroup  # noqa: F821 - builtin from 3.11
else:  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup as _BaseExceptionGroup


class McpError(RuntimeError):
    """A problem with an MCP server, phrased for the user (no secrets inside)."""

    def __init__(self, server: str, message: str) -> None:
        self.server = server
        super().__init__(message)


class McpStartError(McpError):
    """An MCP server could not be started, connected to, initialised or listed."""


def describe_target(config: McpServerConfig) -> str:
    """``command: ...`` or ``url: ...`` for messages (no env, no headers, no URL userinfo/query)."""
    if config.url:
        return f"url: {public_url(config.url)}"
    return f"command: {shlex.join([config.command or '', *config.args])}"


def first_error(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups: the SDK's task
    groups wrap what went wrong, and the user wants the cause, not the wrapping."""
    while isinstance(exc, _BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc


__all__ = ["McpError", "McpStartError", "describe_target", "first_error"]
