"""An MCP server's skills (SEP-2640): listed with ``skills/list``, each loaded through
``skills/get`` and its files read with ``resources/read``, kept on disk.

A server declares the extension under ``capabilities.extensions`` (MCP 2026-07-28). On a
2025-11-25 session, whose capabilities have no room for extensions, greenroom asks
``skills/list`` once and takes "method not found" as "no skills"; either answer is kept
in the skills cache, so a server is not asked again in later processes until it is
listed again. The cache (``<state dir>/mcp-cache/<key>.skills.json``, beside the tools
listing, same key) holds the entries, so a later process offers the skills without
starting the server; the files read are kept by digest (``greenroom.skills.files``), so
a skill whose files did not change is loaded without reading them again, even while its
server is down. A listing is bounded: ``MAX_SKILLS`` skills, pages that loop or never end
stop; an entry that breaks the extension's rules is left out with a warning.
"""

from __future__ import annotations

import base64
import logging
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio

from greenroom._support.storage import state_dir, write_json_atomic
from greenroom.mcp.cache import cache_key
from greenroom.mcp.sdk import ClientSession, MCPError, mcp_types
from greenroom.skills.entry import MAX_SKILLS, SKILLS_EXTENSION, SkillEntry, SkillError, SkillFile
from greenroom.skills.files import FileCache
from greenroom.skills.tool import SkillTool, checked

if TYPE_CHECKING:
    from greenroom.mcp.naming import ToolNamer
    from greenroom.mcp.server import McpServer

log = logging.getLogger(__name__)

CACHE_FORMAT = "greenroom.mcp-skills/1"
_MAX_PAGES = 1000
_FIRST_WITH_EXTENSIONS = "2026-07-28"
"""The first revision whose capabilities carry ``extensions``."""


class _Params(mcp_types.RequestParams):
    """The params of the extension's requests: ``skills/list``'s cursor, ``skills/get``'s uri."""

    cursor: str | None = None
    uri: str | None = None


class _Listed(mcp_types.PaginatedResult):
    """A ``skills/list`` page; its entries are checked here, one by one (``SkillEntry``)."""

    skills: list[Any] = []


class _Got(mcp_types.Result):
    """A ``skills/get`` result; its entry is checked here."""

    skill: Any = None


def _request(method: str, params: _Params | None) -> mcp_types.Request[_Params | None, str]:
    """A request of the extension, sent as the session sends its own (``send_request``)."""
    return mcp_types.Request[_Params | None, str](method=method, params=params)


def skills_cache_path(server: McpServer) -> Path:
    return state_dir() / "mcp-cache" / f"{cache_key(server.config, server.base_dir)}.skills.json"


class McpSkills:
    """The skills of one MCP server (a ``SkillSource``); ``on_change`` hears of a listing
    that changed them (in the host loop)."""

    def __init__(self, server: McpServer, namer: ToolNamer, on_change: Callable[[McpSkills], None]) -> None:
        self.server = server
        self.label = server.name
        self.origin = f"MCP server {server.name!r}"
        self.group_id = f"skills:{server.name}"
        self.files = FileCache(cache_key(server.config, server.base_dir))
        self._namer = namer
        self._on_change = on_change
        self.offered: bool | None = None
        """Whether the server offers skills; None until it was asked (here or before)."""
        self._entries: tuple[SkillEntry, ...] = ()
        self._tools: list[SkillTool] = []
        self._lock: anyio.Lock | None = None  # one listing at a time (host loop)
        self._session: ClientSession | None = None  # the session listed last
        self._read_cache()

    def _read_cache(self) -> None:
        import json

        path = skills_cache_path(self.server)
        try:
            data = json.loads(path.read_bytes())
            if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT:
                return
            offered, listed = bool(data["offered"]), data["skills"]
            entries = tuple(SkillEntry.from_json(item) for item in listed[:MAX_SKILLS])
        except FileNotFoundError:
            return
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("ignoring unreadable MCP skills cache %s: %s", path, exc)
            return
        self.offered = offered
        self._set(entries)

    def _set(self, entries: tuple[SkillEntry, ...]) -> None:
        """Take ``entries``, naming their tools (a skill whose entry did not change keeps
        its tool, and the entry it was loaded with)."""
        before = {t.entry.uri: t for t in self._tools}
        seen: dict[str, int] = {}
        tools = []
        naming = self.server.config.naming
        for entry in entries:
            seen[entry.name] = seen.get(entry.name, 0) + 1
            name = self._namer.name(self.server.name, f"skill:{entry.name}", naming, seen[entry.name])
            old = before.get(entry.uri)
            same = old is not None and old.descriptor.name == name and old.entry == entry
            tools.append(old if same and old is not None else SkillTool(self, entry, name, self.group_id))
        self._entries, self._tools = entries, tools

    def tools(self) -> Sequence[SkillTool]:
        return self._tools

    async def refresh(self) -> Sequence[SkillTool]:
        try:
            await self.server.with_session(self.listed)
        except Exception:
            if not self.offered:
                raise  # nothing known to load: the load fails with why, and can be retried
            # known from an earlier listing: each skill loads from its cached files, or says why not
            log.warning("MCP server %r could not list its skills; they are loaded from its last listing", self.label)
        return self._tools

    async def beside(self, session: ClientSession) -> None:
        """List the skills of a session that just started, unless that was done (host loop:
        beside the session, ``McpServer.then``, and when a toolset prepares the server).
        Nothing escapes: the server's tools stand without its skills."""
        try:
            await self.listed(session, again=False)
        except Exception as exc:  # asked again when the skills are loaded
            log.warning("MCP server %r: its skills could not be listed: %s", self.server.name, exc)

    async def listed(self, session: ClientSession, *, again: bool = True) -> None:
        """List the server's skills in the live ``session`` (host loop), keep and cache them
        (not ``again`` when that session was listed already)."""
        if self._lock is None:
            self._lock = anyio.Lock()
        async with self._lock:
            if again or self._session is not session:
                self._session = session
                await self._list(session)

    async def _list(self, session: ClientSession) -> None:
        with anyio.fail_after(self.server.config.timeout):
            listed = await _list(session, self.server.name)
        offered = listed is not None
        entries = tuple(listed or ())
        changed = entries != self._entries
        if not changed and offered == self.offered:
            return  # what the cache holds already (read at start, or written the last time)
        self.offered = offered
        if changed:
            self._set(entries)
        body = {"format": CACHE_FORMAT, "server": self.server.name, "offered": offered, "listed_at": time.time()}
        body["skills"] = [e.to_json() for e in entries]
        try:
            write_json_atomic(skills_cache_path(self.server), body)
        except (OSError, ValueError) as exc:  # a read-only state folder costs a listing later, nothing more
            log.warning("could not write the MCP skills cache for %r: %s", self.server.name, exc)
        self.files.prune(f for e in entries for f in e.files or ())
        if changed:
            self._on_change(self)

    async def current(self, entry: SkillEntry) -> SkillEntry:
        """The entry ``skills/get`` gives now; the one held when the server cannot say
        (down, or refusing): its files are then served from the cache, or not at all."""

        async def get(session: ClientSession) -> _Got:
            with anyio.fail_after(self.server.config.timeout):
                return await session.send_request(_request("skills/get", _Params(uri=entry.uri)), _Got)

        try:
            return _entry_of(await self.server.with_session(get), entry.uri)
        except Exception as exc:  # the server down or refusing, a result that breaks the rules
            log.info("skills/get of %s from %s failed; using its listed entry: %s", entry.uri, self.origin, exc)
        return entry

    async def fetch(self, entry: SkillEntry, file: SkillFile) -> bytes:
        kept = self.files.get(file)
        if kept is not None:
            return kept

        async def read(session: ClientSession) -> bytes:
            with anyio.fail_after(self.server.config.timeout):
                return _bytes(await session.read_resource(file.uri), file.uri)

        try:
            data = await self.server.with_session(read)
        except SkillError:
            raise
        except Exception as exc:  # the server down, a refused read, a timeout
            raise SkillError(f"{file.uri} could not be read from {self.origin}: {type(exc).__name__}: {exc}") from None
        self.files.put(file, checked(self.origin, file, data))
        return data


def _declared(session: ClientSession) -> bool | None:
    """Whether the server declared the extension; None when its revision cannot say."""
    init = session.initialize_result
    extensions = init.capabilities.extensions if init is not None else None
    if extensions and SKILLS_EXTENSION in extensions:
        return True
    version = session.protocol_version or "2025-11-25"
    return False if version >= _FIRST_WITH_EXTENSIONS else None


async def _list(session: ClientSession, server: str) -> list[SkillEntry] | None:
    """Every page of ``skills/list`` (None: the server has no skills), each bad entry left out."""
    declared = _declared(session)
    if declared is False:
        return None
    entries: list[SkillEntry] = []
    cursors: set[str] = set()
    cursor: str | None = None
    for _ in range(_MAX_PAGES):
        try:
            listed = await session.send_request(
                _request("skills/list", _Params(cursor=cursor) if cursor else None), _Listed
            )
        except MCPError as exc:
            if declared is None and exc.code == mcp_types.METHOD_NOT_FOUND:
                return None  # a 2025-11-25 server that does not know the extension
            raise
        for item in listed.skills:
            try:
                entries.append(SkillEntry.from_json(item))
            except ValueError as exc:
                log.warning("MCP server %r listed a skill greenroom leaves out: %s", server, exc)
            if len(entries) >= MAX_SKILLS:
                log.warning("MCP server %r lists more than %d skills; the rest are left out", server, MAX_SKILLS)
                return entries
        cursor = listed.next_cursor
        if not cursor or cursor in cursors:
            break
        cursors.add(cursor)
    return entries


def _entry_of(got: _Got, uri: str) -> SkillEntry:
    entry = SkillEntry.from_json(got.skill)
    if entry.uri != uri:
        raise ValueError(f"skills/get of {uri} answered the skill {entry.uri}")
    return entry


def _bytes(result: Any, uri: str) -> bytes:
    """The content of ``uri`` in a ``resources/read`` result, as bytes (text as UTF-8)."""
    contents = [c for c in result.contents if str(c.uri) == uri] or list(result.contents)
    if not contents:
        raise SkillError(f"reading {uri} gave no content")
    content = contents[0]
    text = getattr(content, "text", None)
    if isinstance(text, str):
        return text.encode("utf-8")
    return base64.b64decode(getattr(content, "blob", "") or "")


__all__ = ["CACHE_FORMAT", "McpSkills", "skills_cache_path"]
