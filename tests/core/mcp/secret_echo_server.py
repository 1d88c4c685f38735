"""A careless MCP server for the secret tests: it echoes what it was given.

``python secret_echo_server.py`` serves stdio and reads ``API_TOKEN`` and ``LOG_LEVEL``
from its environment; ``python secret_echo_server.py PORT`` serves streamable HTTP on
127.0.0.1 and echoes the request's headers and query. Built on the SDK's own server API.
"""

from __future__ import annotations

import base64
import os
import sys
import urllib.parse
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("greenroom-test-secrets", instructions="Echoes secrets, for greenroom's tests.")


def _token() -> str:
    return os.environ.get("API_TOKEN", "")


@server.tool(description="Say which token and log level the server runs with, in every form.")
def leak() -> str:
    token = _token()
    return "\n".join(
        [
            f"token: {token}",
            f"base64: {base64.b64encode(token.encode()).decode()}",
            f"basic: Authorization: Basic {base64.b64encode(f'robot:{token}'.encode()).decode()}",
            f"url-encoded: {urllib.parse.quote(token, safe='')}",
            f"log level: {os.environ.get('LOG_LEVEL', '')}",
        ]
    )


@server.tool(description="The token as structured content.")
def leak_structured() -> dict[str, Any]:
    return {"token": _token(), "nested": [{"again": f"Bearer {_token()}"}], "level": os.environ.get("LOG_LEVEL", "")}


@server.tool(description="Fail, quoting the token.")
def leak_error() -> str:
    raise ToolError(f"the token {_token()} was refused")  # a ToolError's message reaches the client


@server.tool(description="The request's Authorization and X-Api-Key headers and its query.")
def leak_request(ctx: Context) -> str:
    request: Any = ctx.request_context.request
    if request is None:
        return "<no request>"
    return "\n".join(
        [
            f"authorization: {request.headers.get('authorization', '<none>')}",
            f"x-api-key: {request.headers.get('x-api-key', '<none>')}",
            f"query: {request.url.query}",
            f"accept-language: {request.headers.get('accept-language', '<none>')}",
        ]
    )


if __name__ == "__main__":
    if len(sys.argv) > 1:
        server.run("streamable-http", host="127.0.0.1", port=int(sys.argv[1]))
    else:
        server.run("stdio")
