"""The upstream MCP servers as the gateway meets them: listed while it already answers,
followed when their tools change, and their prompts and resources offered under one roof.

``greenroom serve`` builds its runtime from what is known without starting a server (the
listings cached on disk), so a client's ``initialize`` (or ``server/discover``) is
answered at once, whatever the servers take to start. The servers never listed are then
listed, and the ``start = "eager"`` ones started, concurrently, each within its
``connect_timeout``; their tools join as those of a server that listed new ones do. A
request that needs the tools (``tools/list``, ``tools/call``) waits for that, at most the
longest ``connect_timeout`` of those servers, and the log says whom it waits for; a
server that fails to start is logged and left out until a later call starts it
(``FirstListing``, ``upstream_changes``).

Prompts are named ``server__prompt``, and resource templates ``server__name``; a server
with ``naming = "bare"`` keeps its own names where no server before it (in config order)
took them, as its tools do. Resources keep their URIs, unless two servers offer the same
URI: then each is offered as ``greenroom://SERVER/<quoted uri>``. Templates keep their URI
templates, unless two servers offer the same one: then each is offered as
``greenroom://SERVER/<template>``. A read goes to the server that listed the URI, else the
one its ``greenroom://SERVER/`` names, else the first server (in config order) one of whose
templates matches it (RFC 6570, the SDK's matcher). ``completion/complete`` goes to the server
that owns the prompt or template, by its own name there. Asking for the lists starts the servers
(they start lazily otherwise); a server that fails to start or has no prompts or resources
offers none, and the others are still listed (``Upstream``).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar
from urllib.parse import quote, unquote

import anyio
import mcp_types
from anyio.streams.memory import MemoryObjectReceiveStream

from greenroom import McpServer, Runtime

log = logging.getLogger("greenroom.serve")

SEP = "__"
_NS = "greenroom://"
T = TypeVar("T")


class FirstListing:
    """The listing of the servers the gateway starts with, done in the background."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._done: anyio.Event | None = None  # None: nothing is being listed
        self._waits_for: list[str] = []
        self._bound = 0.0

    async def run(self) -> bool:
        """List and start what the runtime was built without; whether a server was listed
        for the first time (its tools are then the runtime's to take in)."""
        mcp = self.runtime.mcp
        pending = mcp.pending() if mcp is not None else []
        if mcp is None or not pending:
            return False
        self._done = anyio.Event()
        self._waits_for = [s.name for s in pending]
        self._bound = max(s.config.connect_timeout for s in pending)
        first = any(s.listing is None for s in pending)
        await mcp.prepare(late=True)
        return first

    def finish(self) -> None:
        """Whatever the listing came to, requests wait for it no longer."""
        if self._done is not None:
            self._done.set()

    async def wait(self, method: str) -> None:
        """Until the first listing is done (a request that needs the tools), bounded."""
        done = self._done
        if done is None or done.is_set():
            return
        names = ", ".join(repr(n) for n in self._waits_for)
        log.info("%s waits for MCP servers %s to start (at most %g s)", method, names, self._bound)
        with anyio.move_on_after(self._bound):
            await done.wait()
        if not done.is_set():  # each start is bounded by its connect_timeout: a backstop
            log.warning("%s goes on without MCP servers %s, which did not start in time", method, names)


def upstream_changes(runtime: Runtime) -> MemoryObjectReceiveStream[None] | None:
    """A stream that says (at most one notice pending) when an upstream server's tools
    changed; told in the MCP host's thread, read in the caller's loop."""
    mcp = runtime.mcp
    if mcp is None:
        return None
    send, receive = anyio.create_memory_object_stream[None](1)
    token = anyio.lowlevel.current_token()

    def put() -> None:
        with contextlib.suppress(anyio.WouldBlock):  # a notice is pending already
            send.send_nowait(None)

    def heard() -> None:
        try:
            anyio.from_thread.run_sync(put, token=token)
        except Exception:  # the gateway is stopping
            log.debug("an upstream change was not handed on", exc_info=True)

    mcp.on_change(heard)
    return receive


class Upstream:
    """Prompts and resources of every upstream server, namespaced."""

    def __init__(self, runtime: Runtime) -> None:
        mcp = runtime.mcp
        self.servers: dict[str, McpServer] = dict(mcp.servers) if mcp is not None else {}
        """The runtime's ``[[tools.mcp]]`` servers by name."""
        self._uris: dict[str, tuple[str, str]] = {}  # offered uri -> (server, its own uri)
        self._prompts: dict[str, tuple[str, str]] | None = None  # offered name -> (server, its own name)
        self._templates: list[tuple[str, Any]] | None = None  # (server, UriTemplate), config order
        self._template_routes: dict[str, tuple[str, str]] = {}  # offered uri template -> (server, its own)

    async def _each(self, capability: str, use: Callable[[Any], Awaitable[T]]) -> list[tuple[str, T]]:
        out: list[tuple[str, T]] = []
        for name, server in self.servers.items():
            try:
                await server.with_session(_noop)  # started: then it says what it offers
                if not server.offers(capability):
                    continue
                out.append((name, await server.with_session(use)))
            except Exception as exc:  # one server's trouble hides only its own offers
                log.info("MCP server %r: no %s listed (%s)", name, capability, exc)
        return out

    # -- prompts ---------------------------------------------------------------------------
    def _names(self, owned: list[tuple[str, str]]) -> list[str]:
        """The names ``(server, own name)`` pairs are offered under: ``server__name``, or the
        own name for a ``naming = "bare"`` server when no pair before it took that name."""
        taken: set[str] = set()
        out: list[str] = []
        for srv, own in owned:
            server = self.servers.get(srv)
            bare = server is not None and server.config.naming == "bare" and own not in taken
            out.append(own if bare else f"{srv}{SEP}{own}")
            taken.add(out[-1])
        return out

    async def list_prompts(self) -> list[mcp_types.Prompt]:
        listed = await self._each("prompts", lambda s: s.list_prompts())
        owned = [(srv, p) for srv, res in listed for p in res.prompts]
        names = self._names([(srv, p.name) for srv, p in owned])
        self._prompts = {name: (srv, p.name) for name, (srv, p) in zip(names, owned, strict=True)}
        return [p.model_copy(update={"name": name}) for name, (_, p) in zip(names, owned, strict=True)]

    async def _listed_prompt(self, name: str) -> tuple[str, str] | None:
        await self.list_prompts()
        return (self._prompts or {}).get(name)

    async def _prompt_route(self, name: str) -> tuple[str, str]:
        route = (self._prompts or {}).get(name)
        if route is None:
            srv, sep, own = name.partition(SEP)
            if sep and srv in self.servers:  # a prefixed name reaches its server, listed or not
                route = (srv, own)
            elif self._prompts is None:  # a bare name is known once the prompts were listed
                route = await self._listed_prompt(name)
        if route is None:
            raise KeyError(f"no prompt named {name!r}")
        return route

    async def get_prompt(self, name: str, arguments: dict[str, str] | None) -> mcp_types.GetPromptResult:
        srv, own = await self._prompt_route(name)
        result: mcp_types.GetPromptResult = await self.servers[srv].with_session(lambda s: s.get_prompt(own, arguments))
        return result

    # -- resources -------------------------------------------------------------------------
    async def list_resources(self) -> list[mcp_types.Resource]:
        listed = await self._each("resources", lambda s: s.list_resources())
        counts: dict[str, int] = {}
        for _, res in listed:
            for r in res.resources:
                counts[str(r.uri)] = counts.get(str(r.uri), 0) + 1
        out: list[mcp_types.Resource] = []
        for srv, res in listed:
            for r in res.resources:
                uri = str(r.uri)
                offered = uri if counts[uri] == 1 else f"{_NS}{srv}/{quote(uri, safe='')}"
                self._uris[offered] = (srv, uri)
                out.append(r if offered == uri else r.model_copy(update={"uri": offered}))
        return out

    async def list_templates(self) -> list[mcp_types.ResourceTemplate]:
        listed = await self._each("resources", lambda s: s.list_resource_templates())
        counts: dict[str, int] = {}
        for _, res in listed:
            for t in res.resource_templates:
                counts[t.uri_template] = counts.get(t.uri_template, 0) + 1
        out: list[mcp_types.ResourceTemplate] = []
        matchers: list[tuple[str, Any]] = []
        owned = [(srv, t) for srv, res in listed for t in res.resource_templates]
        for name, (srv, t) in zip(self._names([(srv, t.name) for srv, t in owned]), owned, strict=True):
            matcher = _matcher(t.uri_template)
            if matcher is not None:
                matchers.append((srv, matcher))
            offered = t.uri_template if counts[t.uri_template] == 1 else f"{_NS}{srv}/{t.uri_template}"
            self._template_routes[offered] = (srv, t.uri_template)
            out.append(t.model_copy(update={"name": name, "uri_template": offered}))
        self._templates = matchers
        return out

    async def _by_template(self, uri: str) -> tuple[str, str] | None:
        """The first server (config order) one of whose templates matches ``uri``."""
        if self._templates is None:
            await self.list_templates()
        for srv, matcher in self._templates or ():
            try:
                if matcher.match(uri) is not None:
                    return srv, uri
            except ValueError:  # a URI over the matcher's length bound matches nothing
                continue
        return None

    def _route(self, uri: str) -> tuple[str, str] | None:
        known = self._uris.get(uri)
        if known is not None:
            return known
        if uri.startswith(_NS):
            srv, _, quoted = uri[len(_NS) :].partition("/")
            if srv in self.servers:
                return srv, unquote(quoted)
        return None

    async def locate(self, uri: str) -> tuple[str, str]:
        """The server a resource URI the gateway offers is read from, and its own URI there
        (a ``KeyError`` for one no server offers)."""
        route = self._route(uri)
        if route is None:
            if not self._uris:
                await self.list_resources()
                route = self._route(uri)
            if route is None:
                route = await self._by_template(uri)
            if route is None and len(self.servers) == 1:  # one server can only mean that one
                route = (next(iter(self.servers)), uri)
        if route is None:
            raise KeyError(f"no resource {uri!r}")
        return route

    async def read_resource(self, uri: str) -> mcp_types.ReadResourceResult:
        srv, own = await self.locate(uri)
        result: mcp_types.ReadResourceResult = await self.servers[srv].with_session(lambda s: s.read_resource(own))
        if own != uri:  # the client asked by the offered URI: answer with it
            contents = [c.model_copy(update={"uri": uri}) if str(c.uri) == own else c for c in result.contents]
            result = result.model_copy(update={"contents": contents})
        return result

    # -- completions ------------------------------------------------------------------------
    async def complete(self, params: mcp_types.CompleteRequestParams) -> mcp_types.CompleteResult:
        """``completion/complete`` from the server that owns the prompt or template, asked
        by its own name; a server that offers no completions completes nothing."""
        ref = params.ref
        if isinstance(ref, mcp_types.PromptReference):
            srv, own = await self._prompt_route(ref.name)
        else:
            if self._templates is None:
                await self.list_templates()
            route = self._template_routes.get(ref.uri)
            if route is None:
                raise KeyError(f"no resource template {ref.uri!r}")
            srv, own = route
        server = self.servers[srv]
        await server.with_session(_noop)  # started: then it says whether it completes
        if not server.offers("completions"):
            return mcp_types.CompleteResult(completion=mcp_types.Completion(values=[]))
        theirs = ref.model_copy(update={"name": own} if isinstance(ref, mcp_types.PromptReference) else {"uri": own})
        argument = {"name": params.argument.name, "value": params.argument.value}
        context = params.context.arguments if params.context is not None else None
        result: mcp_types.CompleteResult = await server.with_session(lambda s: s.complete(theirs, argument, context))
        return result


async def _noop(session: Any) -> None:
    return None


def _matcher(template: str) -> Any:
    """The SDK's RFC 6570 matcher for ``template``; None for one it cannot match by (two
    multi-segment variables, say): that template is still listed, reads name its server."""
    from mcp.shared.uri_template import InvalidUriTemplate, UriTemplate

    try:
        return UriTemplate.parse(template)
    except (InvalidUriTemplate, ValueError):
        return None


__all__ = ["SEP", "FirstListing", "Upstream", "upstream_changes"]
