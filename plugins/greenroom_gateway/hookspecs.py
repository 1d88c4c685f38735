"""The hook the gateway declares and calls: ``greenroom_serve_request``, around each request
an MCP client sends it. Other plugins implement it (``greenroom_otel``: a server span per
request) with ``@hookimpl(optionalhook=True)``, so they load where the gateway is not
installed; the gateway calls it through ``Runtime.call_hook``."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from greenroom import hookspec

if TYPE_CHECKING:
    from greenroom.kit import McpRequest


@hookspec
def greenroom_serve_request(request: McpRequest) -> AbstractContextManager[object] | None:
    """Observe a request a client sends to ``greenroom serve`` (``tools/call``,
    ``tools/list``, prompts and resources).

    Called once per request as the gateway starts handling it, with the client's
    ``params._meta`` as ``request.meta`` and, over HTTP, its headers. Return a context
    manager (or None): the gateway enters it in the task that handles the request (a
    tracer's server span can be made current there, so what the request runs is inside
    it), and exits it when the answer is ready. It must be a plain ``def`` and return at
    once. A failure (a raise, an answer that is not a context manager, a manager that
    fails to enter or exit) is logged and that answer left out; the request goes on.
    """
