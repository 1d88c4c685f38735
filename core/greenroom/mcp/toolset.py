"""The MCP servers of one runtime: one host, one namer, their groups and eager tools, one close.

A deferred server (``defer = true``) is one ``ToolGroup`` (``mcp:<server>``) whose
catalog comes from the listing cache, so a later process builds it without starting the
server; a server with ``defer = false`` (or ``"never"``: its tools hint eager) gives
normal tools that start it on first call. A server's skills (``greenroom.skills.mcp``),
listed each time it starts and cached beside its tools, are a skills group,
``skills:<server>``, deferred whatever ``defer`` says.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from pathlib import Path

import anyio

from greenroom._support.redact import Secrets
from greenroom.config import McpServerConfig
from greenroom.mcp.errors import McpError, McpStartError
from greenroom.mcp.host.thread import McpHost
from greenroom.mcp.naming import MAX_PREFIX, ToolNamer, safe_name
from greenroom.mcp.server import McpServer
from greenroom.plugins.readiness import Readiness
from greenroom.run.policy import HideReason, ToolPolicy
from greenroom.skills.mcp import McpSkills
from greenroom.skills.tool import skill_group
from greenroom.tools import Tool
from greenroom.tools.groups import ToolGroup

log = logging.getLogger(__name__)


class McpToolset:
    """The MCP servers of one runtime: their groups, their eager tools, one close.

    ``base_dir`` is the servers' working folder; ``base_dirs`` overrides it per server
    name (servers declared in different config files). ``reserved_names`` are the names
    of the runtime's other tools (bare names never take them). Nothing starts in the
    constructor; ``prepare()`` (or ``prepare_blocking()`` from synchronous code) lists the
    servers that have no cached listing and starts the ``start = "eager"`` ones.
    """

    def __init__(
        self,
        configs: Sequence[McpServerConfig],
        base_dir: str | Path = ".",
        *,
        base_dirs: Mapping[str, str | Path] | None = None,
        reserved_names: Iterable[str] = (),
        policy: ToolPolicy | None = None,
    ) -> None:
        self.policy = policy or ToolPolicy()
        seen: set[str] = set()
        for c in configs:
            if c.name in seen:
                raise McpError(c.name, f"two MCP servers are named {c.name!r}")
            seen.add(c.name)
        self.host = McpHost()
        self.namer = ToolNamer(reserved_names)
        self.servers: dict[str, McpServer] = {
            c.name: McpServer(c, (base_dirs or {}).get(c.name, base_dir), host=self.host, namer=self.namer)
            for c in configs
        }
        self.errors: dict[str, str] = {}  # server name -> why it could not be listed / started
        # servers whose live listing changed, until the runtime takes them (``take_changed``)
        self._changed: dict[str, McpServer] = {}
        self._changed_lock = threading.Lock()  # written in the host thread, read in the caller's
        self._listeners: list[Callable[[], None]] = []
        for server in self.servers.values():
            server.on_change = self._listing_changed
        # Assign names for cached listings now, in config order, so bare-name precedence
        # does not depend on which server happens to start first.
        for s in self.servers.values():
            s.tools()
        self.skills = {name: McpSkills(s, self.namer, self._skills_changed) for name, s in self.servers.items()}
        for name, server in self.servers.items():
            server.then = self.skills[name].beside  # a session's start lists its skills
        self._skill_groups: dict[str, ToolGroup] = {}  # the skills groups handed out, by id
        self._changed_skills: dict[str, McpSkills] = {}

    def _skills_changed(self, skills: McpSkills) -> None:
        with self._changed_lock:
            self._changed_skills[skills.group_id] = skills
        self._listing_changed(skills.server, tools=False)

    def take_changed_skills(self) -> list[tuple[ToolGroup, list[Tool]]]:
        """The skills groups whose skills changed since the last call, with their tools now:
        the group handed out (``groups``), or, for a server that offers skills only now, a
        new one, empty until the runtime takes these tools in."""
        with self._changed_lock:
            changed, self._changed_skills = self._changed_skills, {}
        out: list[tuple[ToolGroup, list[Tool]]] = []
        for skills in changed.values():
            group = self._skill_groups.get(skills.group_id)
            if group is None:
                group = self._skill_groups[skills.group_id] = self._skill_group(skills, known=False)
            out.append((group, list(skills.tools())))
        return out

    def _listing_changed(self, server: McpServer, *, tools: bool = True) -> None:
        with self._changed_lock:
            if tools:
                self._changed[server.name] = server
        for listener in list(self._listeners):
            try:
                listener()
            except Exception:  # a listener that is gone must not stop the listing
                log.debug("a listener of changed MCP tools failed", exc_info=True)

    def on_change(self, listener: Callable[[], None]) -> None:
        """Call ``listener`` (in the host thread: it must only hand the news on) each time
        a server's live listing changes its tools."""
        self._listeners.append(listener)

    def take_changed(self) -> list[McpServer]:
        """The servers whose tools changed since the last call, in config order."""
        with self._changed_lock:
            changed, self._changed = self._changed, {}
        return [s for s in self.servers.values() if s.name in changed]

    def _needs_start(self, server: McpServer) -> bool:
        if self.excluded(server) is not None:
            return False  # the policy hides every tool it has: it never starts
        return server.config.start == "eager" or server.listing is None

    def excluded(self, server: McpServer) -> HideReason | None:
        """Why the policy hides every tool of ``server`` (from its cached listing, or from
        its prefix before it was ever listed), or None when it may have a usable tool.
        A server with bare names and no listing cannot be judged until it is listed."""
        if self.policy.empty:
            return None
        if server.listing is not None:
            reasons = [self.policy.reason(d.name) for d in server.descriptors()]
            if reasons and all(r is not None for r in reasons):
                return reasons[0]
            return None
        prefix = group_prefix(server)
        return None if prefix is None else self.policy.hides_every_name_with(prefix)

    async def prepare(self, *, strict: bool = False, late: bool = False) -> None:
        """List uncached servers and start eager ones, concurrently.

        A server that fails is recorded in ``errors`` and logged (its group stays
        loadable and retries later); with ``strict`` the first failure is raised.
        ``late``: the runtime was built from what was known before (the cached listings),
        so a server listed now for the first time is a change it takes in
        (``take_changed``), as a server that listed new tools is.
        """
        todo = self.pending()
        if todo:
            unlisted = [s for s in todo if s.listing is None]
            await self.host.call(self._prepare_in_host, todo)
            if late:
                with self._changed_lock:
                    self._changed.update((s.name, s) for s in unlisted if s.listing is not None)
        self._after_prepare(strict)

    def pending(self) -> list[McpServer]:
        """The servers ``prepare`` lists or starts: those never listed (cached or live) and
        the ``start = "eager"`` ones, but none the policy hides whole."""
        return [s for s in self.servers.values() if self._needs_start(s)]

    def readiness(self) -> list[Readiness]:
        """One check per server the policy leaves a tool of: listed (from its cache or
        live) and not failing to start. Read as it is: nothing is started or waited on."""
        out = []
        for name, server in self.servers.items():
            if self.excluded(server) is not None:
                continue  # every tool of it is denied: it never starts, nothing waits on it
            what = f"mcp server {name}"
            # in back-off after a failed start: the server's last start failed (it keeps the
            # error until a start succeeds), or the first listing failed and none ran since
            failing = not server.connected and (server.start_failed or (name in self.errors and server.starts == 0))
            if server.listing is None:
                why = "its start failed; it is tried again after a back-off" if failing else "it was never listed"
                out.append(Readiness(what, False, f"no listing: {why}"))
            elif failing:
                out.append(Readiness(what, False, "its last start failed; it is tried again after a back-off"))
            else:
                out.append(Readiness(what, True, "connected" if server.connected else "listed (from its cache)"))
        return out

    def prepare_blocking(self, *, strict: bool = False) -> None:
        """``prepare()`` for synchronous callers such as ``build_runtime``."""
        todo = self.pending()
        if todo:
            self.host.call_blocking(self._prepare_in_host, todo)
        self._after_prepare(strict)

    async def _prepare_in_host(self, servers: list[McpServer]) -> None:
        async def one(s: McpServer) -> None:
            try:
                conn = await s._ensure_connected()
                self.errors.pop(s.name, None)
            except McpStartError as exc:
                self.errors[s.name] = str(exc)
                return
            if conn.session is not None:  # listed by now, for the groups made after this
                await self.skills[s.name].beside(conn.session)

        async with anyio.create_task_group() as tg:
            for s in servers:
                tg.start_soon(one, s)

    def _after_prepare(self, strict: bool) -> None:
        for s in self.servers.values():  # names in config order: see __init__
            s.tools()
        for name, err in self.errors.items():
            log.warning("%s", err)
            if strict:
                raise McpStartError(name, err)

    @property
    def secrets(self) -> Secrets:
        """Every server's secret values (env and header values, URL credentials), for the
        runtime to mask in whatever reaches the model, the trace and the terminal."""
        merged = Secrets()
        for server in self.servers.values():
            merged.merge(server.secrets)
        return merged

    def groups(self) -> list[ToolGroup]:
        """One group per deferred server (``defer = true``), from what is listed now, and
        one skills group per server that offers skills."""
        out = [self._group(s) for s in self.servers.values() if s.config.defer is True]
        for skills in self.skills.values():
            if skills.offered:
                group = self._skill_groups[skills.group_id] = self._skill_group(skills)
                out.append(group)
        return out

    def _skill_group(self, skills: McpSkills, *, known: bool = True) -> ToolGroup:
        group = skill_group(skills, skills.group_id, skills.label, group_prefix(skills.server))
        if not known:
            group.known = []
        return group

    def tools(self) -> list[Tool]:
        """The tools of the other servers, as normal tools (start on first call)."""
        return [t for s in self.servers.values() if s.config.defer is not True for t in s.tools()]

    def instructions(self) -> dict[str, str]:
        """Server instructions by server name (for servers whose tools are not in a group)."""
        return {s.name: s.instructions for s in self.servers.values() if s.instructions}

    def _group(self, server: McpServer) -> ToolGroup:
        description = (
            server.config.description or _first_line(server.instructions) or f"Tools of the MCP server {server.name}"
        )

        async def load() -> list[Tool]:
            try:
                await server.start()
            except McpStartError:
                if server.listing is None:
                    raise  # nothing known to call: the load fails with why, and can be retried
                # The tools are known from an earlier listing: they stay callable, and each
                # call says why the server is not up (or works, once it starts again), rather
                # than the group's tools reading as unknown names.
                log.warning("MCP server %r is not running; its tools are loaded from its last listing", server.name)
            return list(server.tools())

        return ToolGroup(
            id=server.group_id,
            name=server.name,
            description=description,
            loader=load,
            known=server.descriptors(),
            instructions=server.instructions,
            defer=True,
            prefix=group_prefix(server),
        )

    async def aclose(self) -> None:
        """Close every session (no server process is left) and stop the host thread."""
        with anyio.CancelScope(shield=True):
            if self.host.running:
                await self.host.call(self._close_in_host)
            await self.host.astop()

    def close(self) -> None:
        if self.host.running:
            self.host.call_blocking(self._close_in_host)
        self.host.stop()

    async def _close_in_host(self) -> None:
        async with anyio.create_task_group() as tg:
            for s in self.servers.values():
                tg.start_soon(s._disconnect)

    async def __aenter__(self) -> McpToolset:
        await self.prepare()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def group_prefix(server: McpServer) -> str | None:
    """What every tool name of a server with prefixed names starts with (None for bare
    names). Cut well inside the name limit, where a long name keeps its beginning."""
    if server.config.naming != "prefixed":
        return None
    return f"{safe_name(server.name)}__"[:MAX_PREFIX]  # not prefixed_name(..., ""): that names a tool "_"


def _first_line(text: str | None) -> str:
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


async def open_mcp_tools(
    configs: Sequence[McpServerConfig],
    base_dir: str | Path = ".",
    *,
    reserved_names: Iterable[str] = (),
    strict: bool = False,
    policy: ToolPolicy | None = None,
) -> tuple[list[ToolGroup], list[Tool], Callable[[], Awaitable[None]]]:
    """Prepare the servers and return (groups of deferred servers, eager tools, closer)."""
    toolset = McpToolset(configs, base_dir, reserved_names=reserved_names, policy=policy)
    try:
        await toolset.prepare(strict=strict)
    except BaseException:
        await toolset.aclose()
        raise
    return toolset.groups(), toolset.tools(), toolset.aclose


__all__ = ["McpToolset", "open_mcp_tools"]
