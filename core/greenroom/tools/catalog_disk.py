"""A catalog file as read, kept on disk under its digest, so a process that loads a known
catalog parses no JSON.

Reading a catalog of 100,000 tools is mostly JSON parsing and packing each schema
(``CatalogSchema``): about a second, every run. What a read produces (each tool's name,
description, group, ``deferrable`` and packed schema, after repeated names are dropped
and ``limit`` applied) is kept in the digest cache (``greenroom._support.digest_cache``)
as one ``marshal`` blob under the catalog's digest, which covers the file's bytes, how
it was read and the limit: a changed file is another entry. A later read rebuilds the
descriptors from it, about five times faster. Small catalogs are not kept: they parse in
milliseconds.

``read_columns`` and ``keep_columns`` keep such a read in any namespace: an MCP server's
cached listing (``greenroom.mcp.cache``) is kept the same way.
"""

from __future__ import annotations

import marshal
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from greenroom._support.digest_cache import default_digest_cache, work

if TYPE_CHECKING:
    from greenroom.tools.catalog import CatalogFile, Columns

NAMESPACE = "catalog-read.v1"
"""The digest cache's namespace of read catalogs: bump it when the blob's shape changes."""

MIN_BYTES = 1 << 20
"""Catalog files smaller than this are parsed every time (a few milliseconds)."""


def worth_keeping(data: bytes) -> bool:
    return len(data) >= MIN_BYTES


def read_columns(namespace: str, digest: str, width: int) -> tuple[list[Any], ...] | None:
    """The read kept under ``digest``: ``width`` lists of one length, or None when there is
    none or it cannot be used (torn, foreign, of another shape: the caller parses again)."""
    blob = default_digest_cache().get(namespace, digest, binary=True)
    if blob is None:
        return None
    try:
        columns = marshal.loads(blob)
    except (ValueError, TypeError, EOFError):
        return None
    if type(columns) is not tuple or len(columns) != width:
        return None
    if not all(type(c) is list and len(c) == len(columns[0]) for c in columns):
        return None
    return columns


def keep_columns(namespace: str, digest: str, columns: Sequence[list[Any]]) -> None:
    """Keep a read under ``digest``; nothing when a value is one ``marshal`` cannot write
    (a schema kept as sent, nested deeper than it goes)."""
    try:
        blob = marshal.dumps(tuple(columns))
    except ValueError:
        return
    default_digest_cache().put(namespace, digest, blob, binary=True)


def load(catalog: CatalogFile) -> bool:
    """Fill ``catalog`` (empty, digest set) from its kept read; False when there is none
    or it cannot be used (the caller then parses the file)."""
    from greenroom.tools.base import ToolDescriptor
    from greenroom.tools.catalog import CatalogSchema

    columns = read_columns(NAMESPACE, catalog.digest, 5)
    if columns is None:
        return False
    schema = CatalogSchema.from_packed
    catalog.descriptors.extend(
        [
            ToolDescriptor(name, description, schema(p, catalog, i), group, deferrable)
            for i, (name, description, group, deferrable, p) in enumerate(zip(*columns, strict=True))
        ]
    )
    return True


def store(catalog: CatalogFile, columns: Columns) -> None:
    """Keep ``catalog``'s read, the columns its parse gathered; nothing when a schema could
    not be packed (nested deeper than ``marshal`` goes), which every later read then
    parses again."""
    work["catalog parses"] += 1
    if None in columns[4]:
        return
    keep_columns(NAMESPACE, catalog.digest, columns)


__all__ = ["MIN_BYTES", "NAMESPACE", "keep_columns", "load", "read_columns", "store", "worth_keeping"]
