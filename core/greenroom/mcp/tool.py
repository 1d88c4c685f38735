"""A tool of an MCP server as a greenroom ``Tool``: its descriptor, its timeout, its call.

A server takes at most ``max_concurrency`` calls at once from this process: a call beyond
that waits for a free slot, within its own timeout, and is then an error result that names
the server and the limit, never sent.
"""

from __future__ import annotations

import hashlib
import math
import weakref
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import anyio

from greenroom._support.collector import collection_paused
from greenroom._support.globs import compile_glob, is_glob
from greenroom.config import McpServerConfig
from greenroom.mcp.listing import ALWAYS_LOAD, McpListing, McpToolSpec
from greenroom.mcp.observe import McpRequest, observed, run_hook
from greenroom.tools import ToolCallContext, ToolDescriptor, ToolResult
from greenroom.tools.catalog import CatalogSchema

if TYPE_CHECKING:
    from greenroom.mcp.naming import ToolNamer
    from greenroom.mcp.server import McpServer


def tool_parameters(schema: Mapping[str, Any]) -> Mapping[str, Any]:
    """A tool's input schema as the providers take it: Anthropic requires ``"type":
    "object"`` at the top, which some servers leave out (the MCP spec requires it too).
    A packed schema (which has a ``type``: see ``ListingBuilder``) stays packed."""
    if type(schema) is CatalogSchema:
        return schema
    params = dict(schema)
    if "type" not in params:
        params = {"type": "object", **params}
    return params


_MARGIN = 0.05
"""Seconds kept, before the call's deadline, to say the wait for a slot was the problem."""

_slots: weakref.WeakKeyDictionary[McpServer, anyio.Semaphore] = weakref.WeakKeyDictionary()


def server_slots(server: McpServer) -> anyio.Semaphore:
    """The slots of ``server``'s calls (``max_concurrency`` of them), made on first use."""
    slots = _slots.get(server)
    if slots is None:
        slots = _slots[server] = anyio.Semaphore(server.config.max_concurrency)
    return slots


async def take_slot(server: McpServer) -> str | None:
    """Wait for one of ``server``'s slots, within the call's timeout (ending a little before
    the deadline its caller set, so that the caller hears why); None once it is taken, else
    why the call is not sent. Release it with ``server_slots(server).release()``."""
    slots = server_slots(server)
    try:
        slots.acquire_nowait()
        return None
    except anyio.WouldBlock:
        pass
    bound = server.config.timeout
    deadline = anyio.current_effective_deadline()
    if deadline != math.inf:
        left = deadline - anyio.current_time()
        bound = min(bound, left - min(_MARGIN, left / 10))
    with anyio.move_on_after(max(bound, 0.0)):
        await slots.acquire()
        return None
    limit = server.config.max_concurrency
    return (
        f"MCP server {server.name!r} already has {limit} calls in progress, its limit (max_concurrency = "
        f"{limit}); this call waited {max(bound, 0.0):.3g} s for one to finish and was not sent"
    )


class McpTool:
    """A tool of an MCP server, as greenroom's ``Tool``; it calls the server that made it."""

    def __init__(
        self, server: McpServer, spec: McpToolSpec, name: str, group: str | None = None, hint: str | None = None
    ) -> None:
        """``group``: the server's ``group_id``, when the caller has it (one string for a
        listing's tools, not one each); ``hint``: its ``eager_hint`` (``EagerHints``)."""
        self.server = server
        self.spec = spec
        self._descriptor = ToolDescriptor(
            name=name,
            description=spec.description,
            parameters=tool_parameters(spec.input_schema),
            group=server.group_id if group is None else group,
            problem=None if spec.fault is None else spec.problem,
            eager_hint=hint,
        )

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    @property
    def timeout(self) -> float | None:
        """The server's ``timeout``, plus the bounds of the steps a fault makes this call
        take first (a ping, a restart): see ``McpServer.call_budget``."""
        return self.server.call_budget()

    @property
    def mcp_name(self) -> str:
        return self.spec.name

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> ToolResult:
        """The call, observed by ``greenroom_mcp_request`` (what it adds to ``_meta`` is sent)."""
        refused = await take_slot(self.server)
        if refused is not None:
            return ToolResult.error(refused)
        request = McpRequest(
            "tools/call", self.spec.name, server=self.server.name, tool=ctx.tool_name, call_id=ctx.call_id
        )
        try:
            with observed(run_hook("greenroom_mcp_request", request), request):
                result = await self.server.call_tool(self.spec.name, args, progress=ctx.progress, meta=request.meta)
                request.is_error = result.is_error
                if result.is_error:
                    request.error_type = "tool_error"
        finally:
            server_slots(self.server).release()
        return result

    def __repr__(self) -> str:
        return f"<mcp tool {self._descriptor.name} ({self.server.name}/{self.spec.name})>"


class EagerHints:
    """Which of a server's tools ask to start eager, and who asks (the words of
    ``ToolDescriptor.eager_hint``): its config first (``defer = "never"``, ``always_load``,
    the user's word), then the tool's own ``_meta["anthropic/alwaysLoad"]``. The words
    are made once per server and shared by its tools."""

    META = f'_meta["{ALWAYS_LOAD}"]'

    def __init__(self, config: McpServerConfig) -> None:
        where = f"of MCP server {config.name!r}"
        every = config.defer == "never" or config.always_load is True
        self.every = (
            (f'defer = "never" {where}' if config.defer == "never" else f"always_load {where}") if every else None
        )
        globs = () if isinstance(config.always_load, bool) else config.always_load
        # compiled once: a listing of 100,000 tools asks each of them
        self.globs: list[tuple[Callable[[str], object], str]] = [
            (compile_glob(g).fullmatch if is_glob(g) else g.__eq__, f"always_load {g!r} {where}") for g in globs
        ]

    def of(self, spec: McpToolSpec) -> str | None:
        """The hint of one listed tool (globs match the name the server lists it by)."""
        if self.every is not None:
            return self.every
        for matches, words in self.globs:
            if matches(spec.name):
                return words
        return self.META if spec.always_load else None


_HASHED_AT_ONCE = 4096
"""Tool names joined for one update of the catalog digest (the same bytes as one by one)."""


class ListedTools:
    """A server's tools from its latest listing, named once per listing.

    The listing's catalog (``McpListing.catalog``) is given the tools' descriptors and a
    digest of everything they say (the listing's digest, the names given, the group), so
    what is derived from the whole catalog is found again in a later process that names
    the same tools alike."""

    def __init__(self) -> None:
        self.listing: McpListing | None = None
        self.tools: list[McpTool] = []

    def of(self, server: McpServer, listing: McpListing | None, namer: ToolNamer) -> list[McpTool]:
        if listing is None:
            return []
        known = self.listing
        if listing is known or (known is not None and listing.digest and known.digest == listing.digest):
            self.listing = listing  # the same tools, listed again: names, specs and catalog stay
            return list(self.tools)
        with collection_paused():  # a tool and a descriptor each, none garbage (see list_server)
            return self._named(server, listing, namer)

    def _named(self, server: McpServer, listing: McpListing, namer: ToolNamer) -> list[McpTool]:
        tools: list[McpTool] = []
        seen: dict[str, int] = {}
        naming, owner, group, name_of = server.config.naming, server.name, server.group_id, namer.name
        hint = EagerHints(server.config).of
        for spec in listing.tools:
            # a name listed twice is two tools (the namer gives the copy a suffix), not one lost
            n = seen[spec.name] = seen.get(spec.name, 0) + 1
            tools.append(McpTool(server, spec, name_of(owner, spec.name, naming, n), group, hint(spec)))
        catalog = listing.catalog
        if catalog is not None:
            h = hashlib.blake2b(digest_size=20)
            h.update(f"{listing.digest}\n{group}\n".encode("utf-8", "surrogatepass"))
            for start in range(0, len(tools), _HASHED_AT_ONCE):  # each name and its newline
                names = "\n".join([t.descriptor.name for t in tools[start : start + _HASHED_AT_ONCE]])
                h.update((names + "\n").encode("utf-8", "surrogatepass"))
            catalog.descriptors = [t.descriptor for t in tools]
            digest = f"mcp-listing.{h.hexdigest()}"
            if catalog.digest != digest:
                catalog.digest = digest
                catalog.derived.clear()
        self.listing, self.tools = listing, tools
        return list(tools)


__all__ = ["EagerHints", "ListedTools", "McpTool", "server_slots", "take_slot", "tool_parameters"]
