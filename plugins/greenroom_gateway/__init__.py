"""``greenroom serve``: the config's tools, deferred, as one MCP server for any MCP client.

``gateway`` answers the MCP requests, ``client`` is one client's run through the
runtime's phases, ``results`` speaks MCP's types, ``upstream`` offers the upstream
servers' prompts and resources, ``transport`` serves over stdio or streamable HTTP.
"""

from greenroom.serve.gateway import Gateway
from greenroom.serve.transport import serve_http, serve_stdio

__all__ = ["Gateway", "serve_http", "serve_stdio"]
