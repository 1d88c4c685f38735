"""What an MCP server says about itself: its tools (as greenroom keeps them) and instructions.

Plain data with a JSON form, so the listing cache and the naming rules need no SDK.

A listing of 100,000 tools must not cost 100,000 parsed schemas. ``ListingBuilder``
keeps each tool's ``inputSchema`` packed, as a catalog file's schemas are
(``greenroom.tools.catalog.CatalogSchema``): the listing is a ``CatalogFile`` of its own,
so what is derived from a whole catalog (each schema's problem, token costs, a search
index) is computed once per listing and found again on disk under its digest, and a tool
parses its schema only when it is sent or called. The builder also keeps each tool's line
of the cache file (``encoded``) until the cache is written, so the listing is serialised
once, and the digest is of those very bytes: a listing read back from the cache has the
digest of the one that was written.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

import attrs

from greenroom.tools.base import ToolDescriptor
from greenroom.tools.catalog import CatalogFile, CatalogSchema
from greenroom.tools.schema.problem import SchemaFault, SchemaProblem

if TYPE_CHECKING:
    import mcp_types

_EMPTY_SCHEMA: Mapping[str, Any] = MappingProxyType({"type": "object"})
"""The schema of a tool listed without a usable one (read-only: one object for them all)."""

ALWAYS_LOAD = "anthropic/alwaysLoad"
"""The key of a listed tool's ``_meta`` by which its server asks hosts to keep it loaded
(Claude Code reads it); ``true`` is an eager hint (``ToolDescriptor.eager_hint``)."""


def always_load(meta: Any) -> bool:
    """Whether a listed tool's ``_meta`` asks that it be always loaded (exactly ``true``)."""
    return isinstance(meta, Mapping) and meta.get(ALWAYS_LOAD) is True


class McpToolSpec(NamedTuple):
    """One tool as an MCP server lists it (the part greenroom keeps and caches).

    A named tuple: a listing of 100,000 tools makes one each, and an attrs class with
    frozen fields costs several times as much to make."""

    name: str
    description: str = ""
    input_schema: Mapping[str, Any] = _EMPTY_SCHEMA
    """As the server sent it: a plain mapping, or packed (``CatalogSchema``) by ``ListingBuilder``."""
    title: str | None = None
    fault: str | None = None
    """Why the listed ``inputSchema`` cannot be used (missing, or not a JSON object): the
    tool is listed, and unusable, and ``input_schema`` is an empty object schema."""
    always_load: bool = False
    """The server listed it with ``_meta["anthropic/alwaysLoad"]`` true (cached as
    ``"alwaysLoad": true``)."""

    @property
    def problem(self) -> SchemaProblem | None:
        """The ``fault`` as the schema checks say it (None for a tool with a schema)."""
        if self.fault is None:
            return None
        kind = SchemaFault.MISSING if self.fault == NO_SCHEMA else SchemaFault.NOT_A_SCHEMA
        return SchemaProblem(kind, "#", self.fault)

    @classmethod
    def unusable(cls, raw: Mapping[str, Any], fault: str) -> McpToolSpec:
        """A listed tool the SDK refused (``raw`` as the server sent it), kept by name."""
        described = raw.get("description") or raw.get("title")
        title = raw.get("title")
        return cls(
            name=str(raw["name"]),
            description=described if isinstance(described, str) else "",
            title=title if isinstance(title, str) else None,
            fault=fault,
        )

    @classmethod
    def from_mcp(cls, tool: mcp_types.Tool) -> McpToolSpec:
        schema = dict(tool.input_schema or {"type": "object"})
        return cls(
            name=tool.name,
            description=tool.description or tool.title or "",
            input_schema=schema,
            title=tool.title,
            always_load=always_load(tool.meta),
        )

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "description": self.description,
            "inputSchema": dict(self.input_schema),
            "title": self.title,
        }
        if self.fault is not None:
            data["fault"] = self.fault
        if self.always_load:
            data["alwaysLoad"] = True  # only then: the lines of other tools stay as they were
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> McpToolSpec:
        return cls(
            name=str(data["name"]),
            description=str(data.get("description") or ""),
            input_schema=dict(data.get("inputSchema") or {"type": "object"}),
            title=data.get("title"),
            fault=data.get("fault"),
            always_load=data.get("alwaysLoad") is True,
        )


NO_SCHEMA = "the server listed it without an inputSchema"


def schema_fault(raw: Mapping[str, Any]) -> str | None:
    """What is wrong with the ``inputSchema`` of a listed tool, in a sentence; None when
    it is a JSON object (what the schema checks judge further)."""
    schema = raw.get("inputSchema")
    if schema is None:
        return NO_SCHEMA
    if not isinstance(schema, Mapping):
        return f"its inputSchema is {json_kind(schema)}, not a JSON object"
    return None


def json_kind(value: Any) -> str:
    """What a JSON value is, for a message: ``an object``, ``an array``, ``a string``..."""
    kinds = {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}
    return kinds.get(type(value), "a number")


@attrs.frozen
class McpListing:
    """What a server said about itself: its tools and its instructions.

    ``digest`` identifies the tools (names, descriptions, schemas, in order) when the
    listing came from ``ListingBuilder`` (empty otherwise); ``catalog`` is then the
    catalog its packed schemas belong to, and ``encoded`` the cache file's lines of its
    tools until the cache is written (``greenroom.mcp.cache`` empties it)."""

    tools: tuple[McpToolSpec, ...]
    instructions: str | None = None
    server_name: str | None = None
    server_version: str | None = None
    listed_at: float = 0.0
    digest: str = attrs.field(default="", eq=False)
    catalog: CatalogFile | None = attrs.field(default=None, eq=False, repr=False)
    encoded: list[bytes] | None = attrs.field(default=None, eq=False, repr=False)

    def same_tools(self, other: McpListing | None) -> bool:
        """Whether ``other`` lists the same tools (by digest when both have one)."""
        if other is None:
            return False
        if self.digest and other.digest:
            return self.digest == other.digest
        return self.tools == other.tools


_ENCODER = json.JSONEncoder(separators=(",", ":"), check_circular=False)


def encode_tool(record: Mapping[str, Any]) -> bytes:
    """One tool's line in the cache file: compact, ASCII, keys in a fixed order."""
    return _ENCODER.encode(record).encode("ascii")


class ListingBuilder:
    """Collects a listing tool by tool, each schema packed as it comes (see the module).

    ``source`` names the listing in messages (the server). ``keep_lines``: keep each
    tool's cache line for writing the cache (a listing read from the cache has its file)."""

    def __init__(self, source: str, *, keep_lines: bool = True) -> None:
        self.catalog = CatalogFile(source, "")
        self.specs: list[McpToolSpec] = []
        self.lines: list[bytes] | None = [] if keep_lines else None
        self._hash = hashlib.blake2b(digest_size=20)

    def add(self, record: dict[str, Any], line: bytes | None = None) -> None:
        """A tool as its cache record (``McpToolSpec.to_json``), with its line when known
        (then the caller has hashed it: see ``hashed``)."""
        if line is None:
            line = encode_tool(record)
            self._hash.update(line + b"\n")
            if self.lines is not None:
                self.lines.append(line)
        schema = record.get("inputSchema")
        if type(schema) is not dict:
            schema = {"type": "object"}
        # a schema without "type" is made provider-ready by McpTool (rare): kept as sent
        packed = CatalogSchema(schema, self.catalog, len(self.specs)) if "type" in schema else schema
        name, description = record["name"], record.get("description") or ""
        title, fault = record.get("title"), record.get("fault")
        self.specs.append(
            McpToolSpec(
                name if type(name) is str else str(name),
                description if type(description) is str else str(description),
                packed,
                title if type(title) is str else None,
                fault if type(fault) is str else None,
                record.get("alwaysLoad") is True,
            )
        )

    def add_packed(
        self, name: str, description: str, title: str | None, fault: str | None, schema: Any, hinted: bool
    ) -> None:
        """A tool as ``greenroom.mcp.cache`` keeps a read: its schema packed (``marshal``
        bytes) or, for one without a ``type``, as sent (the caller hashes the lines);
        ``hinted``: its ``always_load``."""
        packed = CatalogSchema.from_packed(schema, self.catalog, len(self.specs)) if type(schema) is bytes else schema
        self.specs.append(McpToolSpec(name, description, packed, title, fault, hinted))

    @property
    def digest(self) -> str:
        """The digest of the lines so far (``McpListing.digest`` once all are in)."""
        return self._hash.hexdigest()

    def hashed(self, body: bytes | memoryview) -> None:
        """The cache file's tool lines, each with its newline, that ``add`` was given one
        by one: hashed at once (the same digest as line by line)."""
        self._hash.update(body)

    def add_spec(self, spec: McpToolSpec) -> None:
        self.add(spec.to_json())

    def add_mcp(self, tool: mcp_types.Tool) -> None:
        """A tool of a ``tools/list`` page (the SDK's model), its schema dict taken as is."""
        schema = tool.input_schema if isinstance(tool.input_schema, dict) and tool.input_schema else {"type": "object"}
        record: dict[str, Any] = {
            "name": tool.name,
            "description": tool.description or tool.title or "",
            "inputSchema": schema,
        }
        record["title"] = tool.title
        if always_load(tool.meta):
            record["alwaysLoad"] = True
        self.add(record)

    def listing(self, **info: Any) -> McpListing:
        """The listing (``info``: instructions, server_name, server_version, listed_at)."""
        digest = self._hash.hexdigest()
        # Until McpServer.tools() names the tools (and gives the catalog its final digest
        # and descriptors), the catalog holds them by their MCP names: what is derived
        # from a listing before then (each schema's problem, by position) is right.
        self.catalog.digest = f"mcp-listing.{digest}"
        # Made together at the end, not as each tool comes: McpServer.tools() replaces them,
        # and what they leave is then one block the named tools take up again.
        self.catalog.descriptors = [
            ToolDescriptor(s.name, s.description, parameters=s.input_schema, problem=s.problem) for s in self.specs
        ]
        return McpListing(tools=tuple(self.specs), digest=digest, catalog=self.catalog, encoded=self.lines, **info)


__all__ = [
    "ALWAYS_LOAD",
    "NO_SCHEMA",
    "ListingBuilder",
    "McpListing",
    "McpToolSpec",
    "encode_tool",
    "json_kind",
    "schema_fault",
]
