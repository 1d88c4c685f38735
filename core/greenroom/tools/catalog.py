"""Descriptor-only tools from a JSON or JSONL catalog file.

The format is one tool per line (JSONL) or a JSON list of objects:
``{"name", "description", "parameters" (JSON Schema or null), "group" (or null)}``, the
format of the evaluation datasets. Such tools can be listed, deferred, searched and
benchmarked; executing one returns an error result.

A loaded catalog knows its digest (of the file's bytes), and each tool's parameter schema
knows the catalog and the position it came from (``CatalogSchema``). What is costly to
derive from a catalog of 100,000 tools (schema checks, token counts) is then computed for
the whole catalog at once and kept on disk under that digest (``greenroom._support.digest_cache``),
and found again without serialising a single schema. Schemas stay packed until read
(``CatalogSchema``): a run parses the ones it sends, and a pass over the whole catalog
reads each with ``peek_schema``, which keeps nothing.
"""

from __future__ import annotations

import hashlib
import marshal
import sys
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path, PurePath
from typing import Any

from greenroom._support.collector import collection_paused
from greenroom.tools.base import ToolCallContext, ToolDescriptor, ToolResult
from greenroom.tools.catalog_records import CatalogError as CatalogError
from greenroom.tools.catalog_records import read_bytes, records


class CatalogFile:
    """One catalog as loaded: where it came from, the digest of its bytes (and of how
    it was read), and its descriptors by position. ``derived`` keeps, for this process,
    what was derived from the whole catalog (by the digest cache's namespace)."""

    __slots__ = ("__weakref__", "derived", "descriptors", "digest", "source")

    def __init__(self, source: str, digest: str) -> None:
        self.source = source
        self.digest = digest
        self.descriptors: list[ToolDescriptor] = []
        self.derived: dict[str, Any] = {}

    def __len__(self) -> int:
        return len(self.descriptors)

    def __repr__(self) -> str:
        return f"CatalogFile({self.source!r}, {len(self.descriptors)} tools, digest {self.digest[:12]})"


class CatalogSchema(Mapping[str, Any]):
    """A catalog tool's parameter schema, read-only, that knows the catalog and position
    it was loaded at (which survives ``attrs.evolve`` of its descriptor).

    It is kept packed (``marshal``, in this process only) until something reads it, then
    parsed once and kept: the parsed schemas of 100,000 tools take about 150 MB, packed
    about 30 MB, and a run reads the few it sends. A pass over a whole catalog (checks,
    counts, indexes) reads each with ``peek_schema``, which keeps nothing.

    Copies and pickles are plain dicts: the catalog stays with the schema it loaded."""

    __slots__ = ("_packed", "_value", "catalog", "index")

    def __init__(self, value: dict[str, Any], catalog: CatalogFile, index: int) -> None:
        self._packed: bytes | None = None
        self._value: dict[str, Any] | None = None
        try:
            self._packed = marshal.dumps(value)
        except ValueError:  # nested deeper than marshal goes: kept as it is
            self._value = value
        self.catalog = catalog
        self.index = index

    @classmethod
    def from_packed(cls, packed: bytes, catalog: CatalogFile, index: int) -> CatalogSchema:
        """The schema of ``marshal`` bytes packed before (a read kept on disk)."""
        schema = cls.__new__(cls)
        schema._packed, schema._value = packed, None
        schema.catalog, schema.index = catalog, index
        return schema

    @property
    def packed(self) -> bytes | None:
        """The packed bytes (None for a schema too deep to pack)."""
        return self._packed

    def _read(self) -> dict[str, Any]:
        value = self._value
        if value is None:
            # the packed bytes stay: two threads reading at once both parse, one is kept
            value = self._value = self.peek()
        return value

    def peek(self) -> dict[str, Any]:
        """The schema, parsed again unless already read (for a pass that keeps nothing;
        the dict is not to be changed)."""
        value = self._value
        if value is None:
            value = marshal.loads(self._packed)  # type: ignore[arg-type]  # one or the other is set
        return value

    def __getitem__(self, key: str) -> Any:
        return self._read()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._read())

    def __len__(self) -> int:
        return len(self._read())

    def __contains__(self, key: object) -> bool:
        return key in self._read()

    def get(self, key: str, default: Any = None) -> Any:
        return self._read().get(key, default)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, CatalogSchema):
            other = other.peek()
        return self.peek() == other if isinstance(other, Mapping) else NotImplemented

    __hash__ = None  # type: ignore[assignment]  # like the dict it stands for

    def __repr__(self) -> str:
        return repr(self.peek())

    def __reduce__(self) -> Any:
        return (dict, (dict(self.peek()),))


def peek_schema(parameters: Mapping[str, Any]) -> Mapping[str, Any]:
    """``parameters`` to read once in a pass over many tools: a catalog schema not read
    yet is parsed for the caller and not kept (see ``CatalogSchema``)."""
    return parameters.peek() if type(parameters) is CatalogSchema else parameters


def schema_origin(schema: Any) -> tuple[CatalogFile, int] | None:
    """The catalog and position a parameter schema was loaded at, or None."""
    if type(schema) is not CatalogSchema:
        return None
    return schema.catalog, schema.index


def catalog_entry(descriptor: ToolDescriptor) -> tuple[CatalogFile, int] | None:
    """The catalog and position ``descriptor`` was loaded at, when its name, description
    and schema are still those of that entry (its group may differ); else None."""
    origin = schema_origin(descriptor.parameters)
    if origin is None:
        return None
    loaded = origin[0].descriptors[origin[1]]
    if loaded is descriptor or (loaded.name == descriptor.name and loaded.description == descriptor.description):
        return origin
    return None


def descriptors_digest(descriptors: Iterable[ToolDescriptor]) -> str:
    """A digest of descriptors in order, everything about each included (name,
    description, schema, group, deferrable): the key of anything derived from them as a
    whole, a search index say. Descriptors of a catalog file cost a lookup each (a run of
    consecutive entries is one record); others are serialised."""
    from greenroom._support.compact import compact_json

    h = hashlib.blake2b(digest_size=20)
    run: list[Any] = []  # [catalog, first index, last index]

    def flush() -> None:
        if run:
            h.update(f"c {run[0].digest} {run[1]} {run[2]}\n".encode("ascii"))
            run.clear()

    for d in descriptors:
        origin = catalog_entry(d)
        if origin is not None:
            catalog, i = origin
            loaded = catalog.descriptors[i]
            if d.group == loaded.group and d.deferrable == loaded.deferrable:
                if run and run[0] is catalog and run[2] == i - 1:
                    run[2] = i
                else:
                    flush()
                    run.extend((catalog, i, i))
                continue
            flush()  # the entry's own name, description and schema, in another group
            record = compact_json([catalog.digest, i, d.group, d.deferrable])
            h.update(b"e " + record.encode("utf-8", "surrogatepass") + b"\n")
            continue
        flush()
        fields = [d.name, d.description, d.parameters, d.group, d.deferrable]
        try:
            record = compact_json(fields)
        except (TypeError, ValueError):  # a schema json cannot write (a set, a cycle): still stable
            record = repr(fields)
        h.update(b"d " + record.encode("utf-8", "surrogatepass") + b"\n")
    flush()
    return h.hexdigest()


class CatalogTool:
    """A descriptor without an implementation, read from a catalog file.

    Catalog tools let a user inspect and benchmark a large catalog; calling one gives
    the model a clear error instead of a crash.
    """

    __slots__ = ("_descriptor", "source")
    timeout: float | None = None

    def __init__(self, descriptor: ToolDescriptor, source: str) -> None:
        self._descriptor = descriptor
        self.source = source

    @property
    def descriptor(self) -> ToolDescriptor:
        return self._descriptor

    async def execute(self, args: dict[str, Any], ctx: ToolCallContext) -> Any:
        return ToolResult.error(
            # the file's name, not its path: what the model reads never shows the machine's folders
            f"tool {self._descriptor.name!r} comes from the catalog {PurePath(self.source).name} and has no "
            "implementation here; it can be searched and inspected but not executed"
        )


_KEYS = frozenset({"name", "description", "parameters", "group", "deferrable", "annotations"})

DIGEST_VERSION = 1
"""Part of every catalog digest: bump it when loading changes what a position holds."""


class _Malformed(ValueError):
    """A record that is not a tool; its location is added by the caller."""


def _fields(item: Any) -> tuple[str, dict[str, Any]]:
    """The record's name and parameter schema, once the record is found well formed."""
    if not isinstance(item, dict):
        raise _Malformed(f"expected an object, got {type(item).__name__}")
    if not _KEYS.issuperset(item):
        raise _Malformed(f"unknown key(s) {', '.join(sorted(set(item) - _KEYS))}")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise _Malformed("'name' must be a non-empty string")
    params = item.get("parameters") or {"type": "object", "properties": {}}
    if not isinstance(params, dict):
        raise _Malformed(f"'parameters' of {name!r} must be a JSON Schema object")
    return name, params


def _shared(group: Any) -> Any:
    # a group's name repeats on every tool of the group: one string for all of them
    return sys.intern(group) if type(group) is str else group


def _descriptor(item: dict[str, Any], name: str, parameters: Mapping[str, Any]) -> ToolDescriptor:
    return ToolDescriptor(
        name=name,
        description=str(item.get("description") or ""),
        parameters=parameters,
        group=_shared(item.get("group")),
        deferrable=item.get("deferrable", "automatic"),
    )


def catalog_digest(data: bytes, *, kind: str, limit: int | None) -> str:
    """The digest of a catalog's bytes, read as ``kind`` and cut at ``limit``."""
    h = hashlib.blake2b(digest_size=20)
    h.update(f"greenroom-catalog {DIGEST_VERSION} {kind} {limit}\n".encode("ascii"))
    h.update(data)
    return h.hexdigest()


def read_catalog(path: str | Path, *, limit: int | None = None) -> CatalogFile:
    """Read a catalog file (first ``limit`` tools if given): its digest and descriptors,
    whose schemas are ``CatalogSchema``s of it."""
    with collection_paused():
        return _read_catalog(Path(path), limit)


def _read_catalog(p: Path, limit: int | None) -> CatalogFile:
    from greenroom.tools import catalog_disk

    data = read_bytes(p)
    kind = "json" if p.suffix == ".json" else "jsonl"
    catalog = CatalogFile(str(p), catalog_digest(data, kind=kind, limit=limit))
    if not catalog_disk.worth_keeping(data):
        _parse(p, data, kind, limit, catalog, None)
        return catalog
    if catalog_disk.load(catalog):
        return catalog
    columns: Columns = ([], [], [], [], [])
    _parse(p, data, kind, limit, catalog, columns)
    del data  # not held while the read is written
    catalog_disk.store(catalog, columns)
    return catalog


Columns = tuple[list[str], list[str], list[Any], list[Any], list[bytes | None]]
"""A read catalog as ``catalog_disk`` keeps it: names, descriptions, groups,
``deferrable``s and packed schemas (None for one too deep to pack), by position."""


def _parse(p: Path, data: bytes, kind: str, limit: int | None, catalog: CatalogFile, columns: Columns | None) -> None:
    """Fill ``catalog`` from ``data``, and ``columns`` if given (for ``catalog_disk``,
    which reads them faster than the descriptors)."""
    out = catalog.descriptors
    seen: set[str] = set()
    keys, descriptor, schema = _KEYS.issuperset, _descriptor, CatalogSchema
    names, descriptions, groups, deferrables, packs = columns or ([], [], [], [], [])
    for key, item in records(p, data):
        # the checks of ``_fields``, inline for speed; ``_fields`` words what fails
        name = item.get("name") if type(item) is dict and keys(item) else None
        params = item.get("parameters") or {"type": "object", "properties": {}} if name else None
        if type(name) is not str or not name or type(params) is not dict:
            try:
                _fields(item)
            except _Malformed as exc:
                where = f"{p}: tools[{key}]" if kind == "json" else f"{p}:{key}"
                raise CatalogError(f"{where}: {exc}") from None
            raise AssertionError(f"{p}:{key}: a record both malformed and not")  # pragma: no cover
        if name in seen:
            continue  # catalogs merged from several sources repeat names; keep the first
        seen.add(name)
        parameters = schema(params, catalog, len(out))
        d = descriptor(item, name, parameters)
        out.append(d)
        if columns is not None:
            names.append(name)
            descriptions.append(d.description)
            groups.append(d.group)
            deferrables.append(d.deferrable)
            packs.append(parameters._packed)
        if limit is not None and len(out) >= limit:
            break


def load_catalog(path: str | Path, *, limit: int | None = None) -> list[CatalogTool]:
    """Read a catalog file into descriptor-only tools (first ``limit`` if given)."""
    with collection_paused():
        catalog = _read_catalog(Path(path), limit)
        return [CatalogTool(d, catalog.source) for d in catalog.descriptors]
