"""Progressive disclosure, experimental (``greenroom serve --experimental progressive-disclosure``):
``tools/catalog``, ``tools/describe`` and ``tools/manifest``, after the MCP drafts.

A client that speaks them needs no search tool: it reads the catalog (a summary, tags and a
schema hash per tool, no schema; with a ``query``, the tools greenroom's search ranks first
for it), asks ``tools/describe`` for the definitions it wants, keeps them by digest
(``tools/manifest``: a ``sha256:`` digest and a size per tool), and calls them by name. All
three cover every tool the caller may call: the ones ``tools/list`` offers, then every
deferred one. A tool the policy or the caller's scopes hide is in none of them, and
``tools/describe`` answers its name as it answers a name that does not exist.

Followed (docs/serve.md says which fields are guessed): ``tools/catalog`` and the
``schemaHash`` of the first Progressive Tool Disclosure draft (modelcontextprotocol
``seps/0000-progressive-tool-disclosure.md``, commit 3132eb2, 2026-04-21), which SEP-2636
later renamed; ``tools/describe`` and ``tools/manifest`` of SEP-2636, Tool Manifests for
Incremental Catalog Synchronization (``seps/2636-tool-manifests.md``, commit 9abb1a3).
"""

from __future__ import annotations

import hashlib
import re
from typing import TYPE_CHECKING, Any

import mcp_types

from greenroom import Runtime, SearchQuery, ToolDescriptor
from greenroom.kit import compact_json
from greenroom_gateway.clients import ClientRun
from greenroom_gateway.offers import INVALID_PARAMS, paged
from greenroom_gateway.requests import observing
from greenroom_gateway.wire import Freshness, to_mcp_tool

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

FLAG = "progressive-disclosure"
SUMMARY_CHARS = 200
MAX_NAMES = 100
"""Names one ``tools/describe`` takes (SEP-2636: at least 50 SHOULD be)."""
QUERY_RESULTS = 20
"""Tools a ``tools/catalog`` with a ``query`` answers with at most."""
CAPABILITY = {"progressiveDisclosure": True, "manifest": True}
"""Declared under ``capabilities.experimental.tools``: the drafts put these keys in
``capabilities.tools``, whose SDK type keeps no key it does not know."""

_SENTENCE = re.compile(r"(?<=[.!?])\s")


class CatalogParams(mcp_types.PaginatedRequestParams):
    query: str | None = None


class DescribeParams(mcp_types.RequestParams):
    names: list[str]


def summary(description: str) -> str:
    """The description's first sentence, at most ``SUMMARY_CHARS`` characters."""
    first = _SENTENCE.split(description.strip(), maxsplit=1)[0].strip()
    first = " ".join(first.split())
    return first if len(first) <= SUMMARY_CHARS else first[: SUMMARY_CHARS - 1].rstrip() + "…"


def canonical(tool: mcp_types.Tool) -> bytes:
    """The tool as ``tools/describe`` gives it, in canonical JSON: keys sorted by code
    point, no whitespace, the shortest escapes (numbers as Python writes them)."""
    return compact_json(tool.model_dump(by_alias=True, mode="json", exclude_none=True)).encode("utf-8")


class Disclosure:
    """The three handlers, over each caller's run (``universe``)."""

    def __init__(self, runtime: Runtime, views: Any) -> None:
        self.runtime = runtime
        self._views = views  # (ctx) -> (ClientRun, its view as tools/list gives it, its freshness)

    def handlers(self) -> dict[str, tuple[type[mcp_types.RequestParams], Any]]:
        return {
            "tools/catalog": (CatalogParams, self.catalog),
            "tools/describe": (DescribeParams, self.describe),
            "tools/manifest": (mcp_types.PaginatedRequestParams, self.manifest),
        }

    async def universe(self, ctx: ServerRequestContext[Any, Any]) -> tuple[ClientRun, list[ToolDescriptor], Freshness]:
        """Every tool the caller may call: its list's, then the deferred ones (never a hidden one)."""
        run, view, fresh = await self._views(ctx)
        listed = {d.name for d in view.tools}
        rest = [d for d in run.run.ctx.catalog() if d.name not in listed]
        return run, [*view.tools, *rest], fresh

    async def catalog(self, ctx: ServerRequestContext[Any, Any], params: CatalogParams) -> dict[str, Any]:
        with observing(self.runtime, ctx, "tools/catalog"):
            return await self._catalog(ctx, params)

    async def describe(self, ctx: ServerRequestContext[Any, Any], params: DescribeParams) -> dict[str, Any]:
        with observing(self.runtime, ctx, "tools/describe"):
            return await self._describe(ctx, params)

    async def manifest(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        with observing(self.runtime, ctx, "tools/manifest"):
            return await self._manifest(ctx, params)

    async def _catalog(self, ctx: ServerRequestContext[Any, Any], params: CatalogParams) -> dict[str, Any]:
        run, tools, _ = await self.universe(ctx)
        if params.query:
            found, _ = await run.run.ctx.search(SearchQuery.parse(params.query, max_results=QUERY_RESULTS), tools)
            by_name = {d.name: d for d in tools}
            tools = [by_name[s.name] for s in found if s.name in by_name]
        shown, following = paged(tools, params)
        entries = []
        for d in shown:
            entry: dict[str, Any] = {"name": d.name, "summary": summary(d.description)}
            if d.group:
                entry["tags"] = [d.group]
            entry["schemaHash"] = hashlib.sha256(canonical(to_mcp_tool(d))).hexdigest()
            entries.append(entry)
        return _with_cursor({"tools": entries}, following)

    async def _describe(self, ctx: ServerRequestContext[Any, Any], params: DescribeParams) -> dict[str, Any]:
        from mcp.shared.exceptions import MCPError

        if not params.names:
            raise MCPError(INVALID_PARAMS, "tools/describe needs one tool name or more", {"reason": "empty"})
        if len(params.names) > MAX_NAMES:
            raise MCPError(INVALID_PARAMS, f"tools/describe takes at most {MAX_NAMES} names", {"maxNames": MAX_NAMES})
        _, tools, _ = await self.universe(ctx)
        by_name = {d.name: d for d in tools}
        unknown = [n for n in params.names if n not in by_name]
        if unknown:  # a hidden tool is as unknown as one that does not exist
            raise MCPError(INVALID_PARAMS, "Unknown tool names", {"unknownNames": unknown})
        described = [
            to_mcp_tool(by_name[n]).model_dump(by_alias=True, mode="json", exclude_none=True) for n in params.names
        ]
        return {"tools": described}

    async def _manifest(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams | None
    ) -> dict[str, Any]:
        _, tools, fresh = await self.universe(ctx)
        shown, following = paged(tools, params)
        entries = []
        for d in shown:
            body = canonical(to_mcp_tool(d))
            entries.append({"name": d.name, "digest": "sha256:" + hashlib.sha256(body).hexdigest(), "size": len(body)})
        return _with_cursor({"entries": entries, "ttlMs": fresh.ttl_ms, "cacheScope": fresh.scope}, following)


def _with_cursor(result: dict[str, Any], following: str | None) -> dict[str, Any]:
    if following is not None:
        result["nextCursor"] = following
    return result


__all__ = ["CAPABILITY", "FLAG", "MAX_NAMES", "SUMMARY_CHARS", "CatalogParams", "DescribeParams", "Disclosure"]
