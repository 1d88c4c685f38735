"""gateway: ``greenroom serve``, a config's tools, deferred, as one MCP server for any MCP
client (stdio or streamable HTTP, MCP 2026-07-28 and 2025-11-25).

An application of the kernel, not a part of it: it imports only ``greenroom`` and
``greenroom.kit``, and every client it serves is a ``Run`` of kind ``CLIENT`` that it
starts, steps and ends through the public run API (``Runtime.start_run``,
``Run.take_client_call``, ``Run.call_tool``, ``Run.next_request``, ``Run.end``).

One job per module: ``gateway`` (the MCP handlers), ``clients`` (a client's run, its view
and its caller), ``sessions`` (the runs kept for callers without a session), ``requests``
(a request as the SDK gives it: its revision, client, connection, progress, observation
and log line), ``wire`` (greenroom's tools, results and lists in MCP's words),
``upstream`` (the upstream servers: listed while the gateway answers, followed, their
prompts, resources and completions), ``offers`` (those as MCP handlers), ``subscriptions``
(resource subscriptions held upstream, their updates passed on), ``resume`` (the event
store: streams resumed with ``Last-Event-ID``), ``disclosure`` (``tools/catalog``,
``tools/describe``, ``tools/manifest``: experimental), ``transport`` (stdio, streamable
HTTP), ``cli`` (the command), ``config`` (``[serve]``), ``hookspecs`` (``greenroom_serve_request``); ``oauth/`` (tokens,
settings, views by scope) and ``ops/`` (probes, the HTTP front, limits, log formats,
shutdown) a level down.

Registered through the ``greenroom.plugins`` entry point as ``gateway``.
"""

from greenroom_gateway.plugin import GatewayPlugin

__all__ = ["GatewayPlugin"]
