"""Skills offered to the gateway's clients: the MCP Skills extension (SEP-2640).

The gateway offers every skill its runtime has (a skills group's tools: the upstream
servers' skills, the local ``[skills] folders``) through ``skills/list`` (in pages, with
``ttlMs`` and ``cacheScope``), ``skills/get``, ``resources/read`` of each file and
``resources/directory/read`` (declared as ``directoryRead``), and declares the extension
under ``capabilities.extensions``. A skill's URIs are the gateway's own: its source's
label first, then the skill's path where it came from (``skill://docs/pdf-processing/
SKILL.md`` for a server ``docs``'s ``skill://pdf-processing/SKILL.md``; a skill of the
local folders is under ``skill://local/``), so two servers' same-named skills stay
apart; its front matter and its files' digests and sizes are the source's, since the
bytes are the same. A caller is offered what its run may use: a skill the policy or its
view hides is neither listed, got, read, nor under a directory, and a read of an
upstream skill's own URI (or any ``skill://`` URI the gateway does not serve) is refused
rather than passed on, so no path reaches a hidden skill's files. A file read from
upstream is checked against its digest before it is passed on, and kept by digest
(``greenroom.skills.mcp``). Each source is listed again once, on the first request that
needs it, so a gateway started from cached listings offers what its servers hold now.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import anyio
import mcp_types

from greenroom.kit import SKILLS_EXTENSION, SkillError, SkillSource
from greenroom_gateway.requests import observing
from greenroom_gateway.skills.served import (
    SCHEME,
    DirectoryParams,
    GetSkillParams,
    Served,
    contents,
    mime,
    offered_uri,
    unique_labels,
)
from greenroom_gateway.wire import UPSTREAM_TTL_MS, CursorError, Freshness, page

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server

    from greenroom_gateway.gateway import Gateway

log = logging.getLogger("greenroom.serve")

INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603
_DIRECTORY = "inode/directory"
Handler = Callable[[Any, Any], Awaitable[Any]]


def _invalid(message: str) -> Exception:
    from mcp.shared.exceptions import MCPError

    return MCPError(INVALID_PARAMS, message)


class GatewaySkills:
    """The skills handlers of one gateway (see the module)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway
        self.runtime = gateway.runtime
        self._listed = False
        self._lock = anyio.Lock()
        self._memo: tuple[tuple[Any, ...], dict[str, Served], frozenset[str]] | None = None
        self._read: Handler | None = None
        self._list_resources: Handler | None = None

    @property
    def sources(self) -> list[SkillSource]:
        """Where the runtime's skills groups come from (a server that offers skills only
        once it is listed joins them then)."""
        return [g.skills for g in self.runtime.groups.values() if g.skills is not None]

    def _maybe(self) -> list[SkillSource]:
        """The sources, and the upstream servers that may offer skills: never asked yet."""
        mcp = self.runtime.mcp
        unasked = [s for s in mcp.skills.values() if s.offered is None] if mcp is not None else []
        return [*self.sources, *unasked]

    def install(self, server: Server[Any]) -> None:
        """Serve the extension's methods on ``server`` and declare it (nothing when no
        source has skills or may have them)."""
        if not self._maybe():
            return
        read = server.get_request_handler("resources/read")
        listed = server.get_request_handler("resources/list")
        self._read = read.handler if read is not None else None
        self._list_resources = listed.handler if listed is not None else None
        server.add_request_handler("skills/list", mcp_types.PaginatedRequestParams, self.list_skills)
        server.add_request_handler("skills/get", GetSkillParams, self.get_skill)
        server.add_request_handler("resources/directory/read", DirectoryParams, self.read_directory)
        server.add_request_handler("resources/read", mcp_types.ReadResourceRequestParams, self.read_resource)
        # the extension needs the resources capability, which a resources/list handler declares
        server.add_request_handler("resources/list", mcp_types.PaginatedRequestParams, self.list_resources)
        server.extensions[SKILLS_EXTENSION] = {"directoryRead": True}

    # -- what a caller is offered ---------------------------------------------------------
    def _freshness(self) -> Freshness:
        return Freshness(UPSTREAM_TTL_MS, "private" if self.gateway.caller_dependent else "public")

    async def _listed_once(self) -> None:
        """Each source listed again where it comes from, once in the gateway's life."""
        async with self._lock:
            if self._listed:
                return
            self._listed = True
            for source in self._maybe():
                try:
                    await source.refresh()
                except Exception as exc:  # its cached skills stand; a load lists it again
                    log.info("the skills of %s could not be listed: %s", source.origin, exc)
            self.runtime.follow_listings()

    def _served(self) -> tuple[dict[str, Served], frozenset[str]]:
        """Every skill the sources hold (refused ones left out) by the gateway's URI, and
        the sources' own URIs of their files (a read of one is never passed upstream)."""
        tools = [(t, t.entry) for source in self.sources for t in source.tools()]
        key = tuple(item for pair in tools for item in pair)
        if self._memo is not None and self._memo[0] == key:
            return self._memo[1], self._memo[2]
        named = unique_labels(source.label for source in self.sources)
        served: dict[str, Served] = {}
        own: set[str] = set()
        for source, label in zip(self.sources, named, strict=True):
            for tool in source.tools():
                entry = tool.entry
                own.update(f.uri for f in entry.files or ())
                if entry.refusal is not None:
                    continue
                files = {offered_uri(label, f.uri): f for f in entry.files or ()}
                uri = offered_uri(label, entry.uri)
                served[uri] = Served(tool, entry, uri, files)
        self._memo = (key, served, frozenset(own))
        return served, self._memo[2]

    async def _visible(self, ctx: ServerRequestContext[Any, Any]) -> list[Served]:
        """The skills the caller of this request may use."""
        run = await self.gateway.client(ctx)
        await self._listed_once()
        catalog = (await run.run.catalog()).by_name  # judged for this run, hidden ones never in it
        served, _ = self._served()
        return [s for s in served.values() if s.tool.descriptor.name in catalog]

    # -- handlers -------------------------------------------------------------------------
    async def list_skills(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams
    ) -> dict[str, Any]:
        with observing(self.runtime, ctx, "skills/list"):
            visible = await self._visible(ctx)
            try:
                items, following = page(visible, params.cursor)
            except CursorError as exc:
                raise _invalid(str(exc)) from None
            fresh = self._freshness()
            out: dict[str, Any] = {"skills": [s.to_json() for s in items], "ttlMs": fresh.ttl_ms}
            out["cacheScope"] = fresh.scope
            if following:
                out["nextCursor"] = following
            return out

    async def get_skill(self, ctx: ServerRequestContext[Any, Any], params: GetSkillParams) -> dict[str, Any]:
        with observing(self.runtime, ctx, "skills/get", params.uri):
            found = next((s for s in await self._visible(ctx) if s.uri == params.uri), None)
            if found is None:
                raise _invalid(f"No skill is served at {params.uri}")
            fresh = self._freshness()
            return {"skill": found.to_json(), "ttlMs": fresh.ttl_ms, "cacheScope": fresh.scope}

    async def read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.ReadResourceRequestParams
    ) -> Any:
        uri = str(params.uri)
        _, own = self._served()
        if not uri.startswith(SCHEME) and uri not in own:
            if self._read is None:
                raise _invalid(f"no resource {uri!r}")
            return await self._read(ctx, params)
        with observing(self.runtime, ctx, "resources/read", uri):
            found = [(s, s.files[uri]) for s in await self._visible(ctx) if uri in s.files]
            if not found:
                raise _invalid(f"no resource {uri!r}")
            served, file = found[0]
            try:
                data = await served.tool.source.fetch(served.entry, file)
            except SkillError as exc:
                from mcp.shared.exceptions import MCPError

                raise MCPError(INTERNAL_ERROR, str(exc)) from None
            fresh = self._freshness()
            return mcp_types.ReadResourceResult(
                contents=[contents(uri, data)], ttl_ms=fresh.ttl_ms, cache_scope=fresh.scope
            )

    async def list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: mcp_types.PaginatedRequestParams
    ) -> mcp_types.ListResourcesResult:
        """The upstream resources (when any are offered) without skill files."""
        if self._list_resources is None:
            return mcp_types.ListResourcesResult(resources=[], ttl_ms=UPSTREAM_TTL_MS, cache_scope="public")
        result: mcp_types.ListResourcesResult = await self._list_resources(ctx, params)
        _, own = self._served()
        kept = [r for r in result.resources if not str(r.uri).startswith(SCHEME) and str(r.uri) not in own]
        return result.model_copy(update={"resources": kept})

    async def read_directory(self, ctx: ServerRequestContext[Any, Any], params: DirectoryParams) -> dict[str, Any]:
        with observing(self.runtime, ctx, "resources/directory/read", params.uri):
            folder = params.uri.rstrip("/")
            children: dict[str, str] = {}
            for served in await self._visible(ctx):
                if folder != served.root and not folder.startswith(served.root + "/"):
                    continue
                for uri in served.files:
                    if uri.startswith(folder + "/"):
                        head, sub, _ = uri[len(folder) + 1 :].partition("/")
                        child = f"{folder}/{head}"
                        children[child] = _DIRECTORY if sub else mime(child)
            if not children:
                raise _invalid(f"{params.uri} is not a directory resource")
            try:
                items, following = page(sorted(children.items()), params.cursor)
            except CursorError as exc:
                raise _invalid(str(exc)) from None
            listed = [{"uri": uri, "name": uri.rsplit("/", 1)[1], "mimeType": mime} for uri, mime in items]
            out: dict[str, Any] = {"resources": listed}
            if following:
                out["nextCursor"] = following
            return out


__all__ = ["GatewaySkills"]
