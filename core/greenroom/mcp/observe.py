"""The MCP requests greenroom sends upstream, and those MCP clients send ``greenroom serve``,
as plugins see them: ``McpRequest``, and ``observed``, which enters the context managers a
hook's implementations return around a request (a tracer's span, say).

Observing never breaks a request: a hook that raises, answers something that is not a
context manager, or whose manager fails to enter or exit is logged and left out; the
request goes on as if it were not there.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

log = logging.getLogger("greenroom.mcp")


@attrs.define(eq=False)
class McpRequest:
    """One MCP request, as ``greenroom_mcp_request`` (greenroom to an upstream server) and
    ``greenroom_serve_request`` (an MCP client to ``greenroom serve``) see it.

    ``meta`` is the request's ``params._meta``: going upstream, what implementations add
    to it on entering is sent (a ``traceparent``); coming from a client, it is what the
    client sent. ``headers`` are the HTTP headers of a client's request (lower-case names;
    empty over stdio). ``is_error`` and ``error_type`` say how the request ended, set
    before the managers exit.
    """

    method: str
    name: str | None = None
    """The request's target: the tool's MCP name for ``tools/call``."""
    server: str = ""
    """The upstream server's name in the config; empty for a request from an MCP client."""
    tool: str | None = None
    """greenroom's name for the tool called (with its server's prefix, if any)."""
    call_id: str | None = None
    """The tool call of the run this request serves, if any."""
    meta: dict[str, Any] = attrs.field(factory=dict)
    headers: Mapping[str, str] = attrs.field(factory=dict)
    is_error: bool = False
    error_type: str | None = None


@contextlib.contextmanager
def observed(call_hook: Callable[[], list[Any]], request: McpRequest) -> Iterator[McpRequest]:
    """Enter every context manager ``call_hook()`` answers around the request; each one's
    failure is logged and left out. A raise inside marks the request as an error of that
    type before the managers exit."""
    with contextlib.ExitStack() as stack:
        try:
            answers = call_hook()
        except Exception:
            log.warning("a plugin failed observing MCP request %s %s", request.method, request.name, exc_info=True)
            answers = []
        for answer in answers:
            if not (hasattr(answer, "__enter__") and hasattr(answer, "__exit__")):
                log.warning("a plugin observing MCP requests answered %r, not a context manager", type(answer))
                continue
            try:
                answer.__enter__()
            except Exception:
                log.warning("a plugin failed observing MCP request %s %s", request.method, request.name, exc_info=True)
                continue
            stack.push(_contained(answer.__exit__, request))
        try:
            yield request
        except BaseException as exc:
            request.is_error = True
            request.error_type = request.error_type or type(exc).__qualname__
            raise


def _contained(exit_: Callable[..., Any], request: McpRequest) -> Callable[..., bool]:
    def close(*exc_info: Any) -> bool:
        try:
            exit_(*exc_info)
        except Exception:
            log.warning("a plugin failed observing MCP request %s %s", request.method, request.name, exc_info=True)
        return False  # never swallows what the request raised

    return close


def run_hook(hook: str, request: McpRequest) -> Callable[[], list[Any]]:
    """``hook`` called for the run current in this task (none outside a run)."""

    def call() -> list[Any]:
        from greenroom.run.context import current_run  # the run package sits above this one

        ctx = current_run()
        if ctx is None:
            return []
        return ctx.call_hook(hook, ctx=ctx, request=request)

    return call


def header_map(headers: Any) -> dict[str, str]:
    """HTTP headers (a Starlette ``Headers``, a mapping or pairs) with lower-case names."""
    if headers is None:
        return {}
    items = headers.items() if hasattr(headers, "items") else headers
    found: dict[str, str] = {}
    for key, value in items:
        k = key.decode("latin-1") if isinstance(key, bytes) else str(key)
        v = value.decode("latin-1") if isinstance(value, bytes) else str(value)
        found.setdefault(k.lower(), v)
    return found


__all__ = ["McpRequest", "header_map", "observed", "run_hook"]
