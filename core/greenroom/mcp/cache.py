"""The listing cache: what a server listed, saved on disk so a later process builds its
catalog without starting the server.

One file per server identity under ``<state dir>/mcp-cache/``: a first line of JSON with
what the server said about itself, then one line of JSON per tool (JSON Lines), so that a
listing of 100,000 tools is read a few hundred lines at a time into packed schemas
(``ListingBuilder``) rather than parsed whole. A large listing's read is also kept in the
digest cache (``marshal`` columns under the digest of the file's tool lines, as a large
catalog file's is: ``greenroom.tools.catalog_disk``), so the next process parses no
JSON. An unreadable or foreign file is ignored (the server is listed again), and a cache
that cannot be written costs a start later, nothing more.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from greenroom._support.storage import state_dir, write_bytes_atomic
from greenroom.config import McpServerConfig
from greenroom.mcp.listing import ListingBuilder, McpListing, McpToolSpec
from greenroom.tools.catalog import CatalogSchema
from greenroom.tools.catalog_disk import MIN_BYTES, keep_columns, read_columns

log = logging.getLogger(__name__)

CACHE_FORMAT = "greenroom.mcp-cache/3"
"""/3: a tool line has ``"alwaysLoad": true`` when its server listed it so (a file of an
older format would lose the hint: the server is listed again)."""
READ_NAMESPACE = "mcp-listing-read.v2"
"""The digest cache's namespace of kept listing reads: bump it when the columns change."""
_CHUNK = 512
"""Tool lines parsed together: one parse per chunk shares the strings of repeated keys."""


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
    return state_dir() / "mcp-cache" / f"{cache_key(config, base_dir)}.jsonl"


def read_cached_listing(config: McpServerConfig, base_dir: str | Path = ".") -> McpListing | None:
    """The listing saved by an earlier process, or None (missing or unreadable)."""
    path = cache_path(config, base_dir)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.warning("ignoring unreadable MCP listing cache %s: %s", path, exc)
        return None
    try:
        return _parse(config.name, data)
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
        log.warning("ignoring unreadable MCP listing cache %s: %s", path, exc)
        return None


def _parse(server: str, data: bytes) -> McpListing | None:
    end = data.find(b"\n")
    if end < 0:
        raise ValueError("no tool lines")
    head = json.loads(data[:end])
    if not isinstance(head, dict) or head.get("format") != CACHE_FORMAT:
        return None
    if not data.endswith(b"\n"):
        raise ValueError("the last line is cut short")  # every line is written with its newline
    builder = ListingBuilder(f"MCP server {server!r}", keep_lines=False)
    body = memoryview(data)[end + 1 :]
    builder.hashed(body)
    digest = builder.digest
    kept = len(body) >= MIN_BYTES and _from_kept(builder, digest)
    if not kept:
        _from_lines(builder, data[end + 1 : -1].split(b"\n") if len(body) else [])
    if len(builder.specs) != head.get("tools"):
        raise ValueError(f"{len(builder.specs)} tools where the header says {head.get('tools')}")
    if len(body) >= MIN_BYTES and not kept:
        _keep(builder.specs, digest)
    listed_at = head.get("listed_at")
    return builder.listing(
        instructions=head.get("instructions"),
        server_name=head.get("server_name"),
        server_version=head.get("server_version"),
        listed_at=float(listed_at) if isinstance(listed_at, int | float) else 0.0,
    )


def _from_lines(builder: ListingBuilder, lines: list[bytes]) -> None:
    for start in range(0, len(lines), _CHUNK):
        chunk = lines[start : start + _CHUNK]
        # one parse per chunk shares the strings of repeated keys ("type", "properties", ...)
        records = json.loads(b"[" + b",".join(chunk) + b"]")
        if len(records) != len(chunk):
            raise ValueError("a line holds more than one tool")
        for line, record in zip(chunk, records, strict=True):
            if type(record) is not dict:
                raise ValueError("a tool line is not an object")
            builder.add(record, line)


def _from_kept(builder: ListingBuilder, digest: str) -> bool:
    """Fill ``builder`` from the kept read of the listing ``digest``; False when there is
    none or it cannot be used (the lines are parsed instead)."""
    columns = read_columns(READ_NAMESPACE, digest, 6)
    if columns is None:
        return False
    add = builder.add_packed
    for name, description, title, fault, schema, hinted in zip(*columns, strict=True):
        add(name, description, title, fault, schema, hinted)
    return True


def _keep(specs: Sequence[McpToolSpec], digest: str) -> None:
    """Keep a read in the digest cache (nothing when a schema is nested too deep to pack)."""
    schemas = [s.input_schema.packed if type(s.input_schema) is CatalogSchema else s.input_schema for s in specs]
    if None in schemas:
        return
    names = [s.name for s in specs]
    descriptions = [s.description for s in specs]
    titles = [s.title for s in specs]
    faults = [s.fault for s in specs]
    hinted = [s.always_load for s in specs]
    keep_columns(READ_NAMESPACE, digest, (names, descriptions, titles, faults, schemas, hinted))


def write_cached_listing(config: McpServerConfig, base_dir: str | Path, listing: McpListing) -> None:
    """Save ``listing``: atomically (a crash leaves the old file or the new one), readable
    by its owner only. Its ``encoded`` lines are written and let go."""
    head = {
        "format": CACHE_FORMAT,
        "server": config.name,
        "server_name": listing.server_name,
        "server_version": listing.server_version,
        "instructions": listing.instructions,
        "listed_at": listing.listed_at,
        "tools": len(listing.tools),
    }
    lines, digest = listing.encoded, listing.digest
    if lines is None or len(lines) != len(listing.tools):
        digest = ""  # a listing not built by ListingBuilder: read back before it is kept
        builder = ListingBuilder(config.name)
        for spec in listing.tools:
            builder.add_spec(spec)
        lines = builder.lines or []
    try:
        _write(cache_path(config, base_dir), json.dumps(head).encode("ascii"), lines)
    except (OSError, ValueError) as exc:  # a read-only state folder costs a restart later, nothing more
        log.warning("could not write the MCP listing cache for %r: %s", config.name, exc)
        digest = ""
    if digest and sum(len(line) + 1 for line in lines) >= MIN_BYTES:
        _keep(listing.tools, digest)  # the next process reads it without parsing JSON
    if listing.encoded is not None:
        listing.encoded.clear()


def _write(path: Path, head: bytes, lines: list[bytes]) -> None:
    # a few hundred lines a write: one write a line cost more than the bytes, all at once
    # a second copy of the listing's lines
    body = (b"\n".join(lines[i : i + _CHUNK]) + b"\n" for i in range(0, len(lines), _CHUNK))
    write_bytes_atomic(path, itertools.chain((head + b"\n",), body))


__all__ = ["CACHE_FORMAT", "cache_key", "cache_path", "read_cached_listing", "write_cached_listing"]
