"""The listing cache: what a server listed, saved on disk so a later process builds its
catalog without starting the server.

One JSON file per server identity under ``<state dir>/mcp-cache/``. An unreadable or
foreign file is ignored (the server is listed again), and a cache that cannot be written
costs a start later, nothing more.
"""

from __future__ import annotations

import hashlib
import json
import logging
from pathlib import Path
from typing import Any

from greenroom._support.storage import state_dir, write_json_atomic
from greenroom.config import McpServerConfig
from greenroom.mcp.listing import McpListing, McpToolSpec

log = logging.getLogger(__name__)

CACHE_FORMAT = "greenroom.mcp-cache/1"


def cache_key(config: McpServerConfig, base_dir: str | Path = ".") -> str:
    """A hash of what identifies the server's tool set: command, args and working folder,
    or the URL. Env and headers are left out: they hold secrets, and rotating a token
    does not change the tools."""
    if config.url:
        ident: dict[str, Any] = {"url": config.url}
    else:
        ident = {"command": config.command, "args": list(config.args), "cwd": str(Path(base_dir).resolve())}
    return hashlib.sha256(json.dumps(ident, sort_keys=True).encode()).hexdigest()[:24]


def cache_path(config: McpServerConfig, base_dir: str | Path = ".") -> Path:
    return state_dir() / "mcp-cache" / f"{cache_key(config, base_dir)}.json"


def read_cached_listing(config: McpServerConfig, base_dir: str | Path = ".") -> McpListing | None:
    """The listing saved by an earlier process, or None (missing or unreadable)."""
    path = cache_path(config, base_dir)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
            return None
        return McpListing(
            tools=tuple(McpToolSpec.from_json(t) for t in data.get("tools", [])),
            instructions=data.get("instructions"),
            server_name=data.get("server_name"),
            server_version=data.get("server_version"),
            listed_at=float(data.get("listed_at", 0.0)),
        )
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("ignoring unreadable MCP listing cache %s: %s", path, exc)
        return None


def write_cached_listing(config: McpServerConfig, base_dir: str | Path, listing: McpListing) -> None:
    data = {
        "format": CACHE_FORMAT,
        "server": config.name,
        "server_name": listing.server_name,
        "server_version": listing.server_version,
        "instructions": listing.instructions,
        "listed_at": listing.listed_at,
        "tools": [t.to_json() for t in listing.tools],
    }
    try:
        write_json_atomic(cache_path(config, base_dir), data)
    except OSError as exc:  # a read-only state folder costs a restart later, nothing more
        log.warning("could not write the MCP listing cache for %r: %s", config.name, exc)


__all__ = ["CACHE_FORMAT", "cache_key", "cache_path", "read_cached_listing", "write_cached_listing"]
