"""A stdio MCP server that writes its JSON-RPC lines itself: ``python raw_server.py``.

The SDK's server cannot send what this one sends, which is the point: lines other
servers send that greenroom must read. What it answers comes from its environment:

- ``RAW_TOOLS_OBJECT``: ``tools/list`` answers ``"tools"`` as an object (name -> tool), not a list.

Its tools: ``lone`` answers a text holding a lone surrogate, written as JSON writes it
(``"\\ud800"``); ``pictures`` answers three images: data that is not base64, text labelled
``image/png``, and a real PNG.
"""

from __future__ import annotations

import base64
import json
import os
import sys
from typing import Any

PNG = base64.b64encode(
    bytes.fromhex(
        "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
        "1f15c4890000000d49444154789c6360f8cfc0f01f0005000201"
        "e2213bbc0000000049454e44ae426082"
    )
).decode()
TOOLS = [
    {"name": "lone", "description": "Answer a text with a lone surrogate.", "inputSchema": {"type": "object"}},
    {"name": "pictures", "description": "Answer three images.", "inputSchema": {"type": "object"}},
]


def answer(method: str, params: dict[str, Any]) -> dict[str, Any]:
    if method == "initialize":
        return {
            "protocolVersion": params["protocolVersion"],
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "raw", "version": "1"},
        }
    if method == "tools/list":
        if os.environ.get("RAW_TOOLS_OBJECT"):
            return {"tools": {tool["name"]: tool for tool in TOOLS}}
        return {"tools": TOOLS}
    if method == "tools/call" and params["name"] == "lone":
        return {"content": [{"type": "text", "text": "before \ud800 after"}]}
    if method == "tools/call" and params["name"] == "pictures":
        images = ["not base64!", base64.b64encode(b"Not Found").decode(), PNG]  # each labelled a PNG
        return {"content": [{"type": "image", "data": data, "mimeType": "image/png"} for data in images]}
    return {}


def main() -> None:
    for line in sys.stdin:
        message = json.loads(line)
        if "id" not in message:  # a notification
            continue
        result = answer(message["method"], message.get("params") or {})
        # ensure_ascii: a lone surrogate goes out as the escape "\ud800", as JSON allows
        sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
