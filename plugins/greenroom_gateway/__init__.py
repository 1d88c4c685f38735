"""gateway: ``greenroom serve``, a config's tools, deferred, as one MCP server for any MCP
client (stdio or streamable HTTP, MCP 2026-07-28 and 2025-11-25).

An application of the kernel, not a part of it: it imports only ``greenroom`` and
``greenroom.kit``, and every client it serves is a ``Run`` of kind ``CLIENT`` that it
starts, steps and ends through the public run API (``Runtime.start_run``,
``Run.take_client_call``, ``Run.call_tool``, ``Run.next_request``, ``Run.end``).

One job per module: ``gateway`` (the MCP handlers), ``clients`` (a client's run, its view
and its caller), ``sessions`` (the runs kept for callers without a session), ``listings``
(the upstream servers listed while it answers), ``upstream`` (their prompts and
resources), ``wire`` (greenroom's tools, results and lists in MCP's words), ``transport``
(stdio, streamable HTTP), ``sdk_private`` (the one SDK member it reads that has no public
door), ``cli`` (the command), ``config`` (``[serve]``), ``hookspecs``
(``greenroom_serve_request``); ``oauth/`` (tokens, settings, views by scope) and ``ops/``
(probes, the HTTP front, limits, logs, shutdown) a level down.

Registered through the ``greenroom.plugins`` entry point as ``gateway``.
"""

from greenroom_gateway.plugin import GatewayPlugin

__all__ = ["GatewayPlugin"]
