"""MCP errors and the words they use: which server, its command or URL, and the real cause.

Messages name a server by its config name and its command or URL, never by env or
header values. A line a stdio server writes on stdout that is not MCP is one warning
naming the server, not the SDK's traceback. What a server says (its errors, its stderr, its tool results) may quote
them: ``server_secrets`` is the set of a server's secret values (env and header values
that are credentials, URL credentials; in its errors, every env and header value), which
``greenroom._support.redact`` masks in every form a server echoes them in (as is, base64
as in a Basic header, URL-encoded).
"""

from __future__ import annotations

import contextvars
import logging
import re
import shlex
import sys
from collections.abc import Callable

import anyio

from greenroom._support.redact import Secrets, add_header, add_url, public_url
from greenroom.config import McpServerConfig

if sys.version_info >= (3, 11):
    _BaseExceptionGroup = BaseExceptionGroup  # noqa: F821 - builtin from 3.11
else:  # pragma: no cover
    from exceptiongroup import BaseExceptionGroup as _BaseExceptionGroup


class McpError(RuntimeError):
    """A problem with an MCP server, phrased for the user (no secrets inside: ``redact``,
    the server's own redaction, is applied to ``message`` when given)."""

    def __init__(self, server: str, message: str, redact: Callable[[str], str] | None = None) -> None:
        self.server = server
        super().__init__(redact(message) if redact is not None else message)


class McpStartError(McpError):
    """An MCP server could not be started, connected to, initialised or listed."""


def sdk_missing(exc: BaseException) -> str:
    """The one line that says the ``mcp`` extra is missing: what to install, and which module
    could not be imported (``exc``, or the ImportError it was raised from)."""
    return f"the MCP SDK (2.x) is not installed: pip install 'greenroom[mcp]' ({exc.__cause__ or exc})"


def describe_target(config: McpServerConfig) -> str:
    """``command: ...`` or ``url: ...`` for messages (no env, no headers, no URL userinfo/query)."""
    if config.url:
        return f"url: {public_url(config.url)}"
    return f"command: {shlex.join([config.command or '', *config.args])}"


# Names that say a value is a credential, whatever it looks like.
_CREDENTIAL_NAME = re.compile(r"auth|token|secret|passw|pwd|key|cookie|session|credential|signature|private|dsn", re.I)
# Values that are no credential unless their name says so: words joined by separators
# ("info", "application/json", "en-US", "/usr/local/bin") and numbers ("8080", "3.12").
_PLAIN = re.compile(r"[/~]?[A-Za-z]+(?:[-_ ./:,;=]+[A-Za-z]+)*/?|[-+]?[0-9][0-9._:]*")


def is_credential(name: str, value: str) -> bool:
    """Whether the env or header entry ``name = value`` is a credential: its name says so
    (``API_TOKEN``, ``Authorization``, ``X-Api-Key``), or its value is not a plain word,
    path or number (``ghp_x1y2...``)."""
    return bool(_CREDENTIAL_NAME.search(name)) or not _PLAIN.fullmatch(value.strip())


def server_secrets(config: McpServerConfig, *, every_value: bool = False) -> Secrets:
    """What of ``config`` is secret, to hide in whatever the server says: its env and
    header values that are credentials (``is_credential``; with ``every_value``, all of
    them, for its errors and stderr), an auth header's credentials on their own too (a
    Basic header's decoded), and what a URL carries (user info, the password as a Basic
    header carries it with the user, query values such as ``?token=``): the server's own
    and those inside env values (a DSN's password)."""
    secrets = Secrets()
    urls = [config.url] if config.url else []
    for name, value in config.env.items():
        if "://" in value:
            urls.append(value)
        if every_value or is_credential(name, value):
            secrets.add(value)
    for name, value in config.headers.items():
        if every_value or is_credential(name, value):
            add_header(secrets, value)
    for url in urls:
        add_url(secrets, url)
    return secrets


def first_error(exc: BaseException) -> BaseException:
    """The first real error inside (possibly nested) exception groups: the SDK's task
    groups wrap what went wrong, and the user wants the cause, not the wrapping."""
    while isinstance(exc, _BaseExceptionGroup) and exc.exceptions:
        inner = [e for e in exc.exceptions if not isinstance(e, anyio.get_cancelled_exc_class())]
        exc = (inner or list(exc.exceptions))[0]
    return exc


# -- what a stdio server writes on stdout that is not MCP ------------------------------

serving: contextvars.ContextVar[str | None] = contextvars.ContextVar("greenroom_mcp_serving", default=None)
"""The server a session task belongs to: its reader task (the SDK's) inherits it."""

_log = logging.getLogger("greenroom.mcp")
_NOISE = "Failed to parse JSONRPC message from server"


class StdoutNoise(logging.Filter):
    """Turns the SDK's traceback for a stdout line that is not JSON-RPC (a banner, a
    stray print) into one warning that names the server; the session goes on."""

    def filter(self, record: logging.LogRecord) -> bool:
        if not str(record.msg).startswith(_NOISE):
            return True
        from greenroom.mcp.reading import reread

        if reread(record.exc_info[1] if record.exc_info else None) is not None:
            return False  # MCP after all: it is read again, and is not noise (greenroom.mcp.reading)
        line = _offending_line(record)
        server = serving.get() or "an MCP server"
        _log.warning("MCP server %r wrote a line on stdout that is not MCP (ignored): %s", server, line)
        return False


def _offending_line(record: logging.LogRecord) -> str:
    exc = record.exc_info[1] if record.exc_info else None
    errors = getattr(exc, "errors", None)
    try:
        value = errors()[0].get("input") if callable(errors) else None
    except Exception:  # an error of another shape: say less rather than fail
        value = None
    text = value if isinstance(value, str) else "(unreadable)"
    return text if len(text) <= 200 else text[:200] + "..."


def quiet_stdout_noise() -> None:
    """Install ``StdoutNoise`` on the SDK's stdio logger (once)."""
    sdk = logging.getLogger("mcp.client.stdio")
    if not any(isinstance(f, StdoutNoise) for f in sdk.filters):
        sdk.addFilter(StdoutNoise())


__all__ = [
    "McpError",
    "McpStartError",
    "StdoutNoise",
    "describe_target",
    "first_error",
    "is_credential",
    "quiet_stdout_noise",
    "sdk_missing",
    "server_secrets",
    "serving",
]
