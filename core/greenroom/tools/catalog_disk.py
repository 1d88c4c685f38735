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
"""

from __future__ import annotations

import marshal
from typing import TYPE_CHECKING

from greenroom._support.digest_cache import default_digest_cache, work

if TYPE_CHECKING:
    from greenroom.tools.catalog import CatalogFile, Columns

NAMESPACE = "catalog-read.v1"
"""The digest cache's namespace of read catalogs: bump it when the blob's shape changes."""

MIN_BYTES = 1 << 20
"""Catalog files smaller than this are parsed every time (a few milliseconds)."""


def worth_keeping(data: bytes) -> bool:
    return len(data) >= MIN_BYTES


def load(catalog: CatalogFile) -> bool:
    """Fill ``catalog`` (empty, digest set) from its kept read; False when there is none
    or it cannot be used (the caller then parses the file)."""
    from greenroom.tools.base import ToolDescriptor
    from greenroom.tools.catalog import CatalogSchema

    blob = default_digest_cache().get(NAMESPACE, catalog.digest, binary=True)
    if blob is None:
        return False
    try:
        columns = marshal.loads(blob)
        if type(columns) is not tuple or len(columns) != 5:
            return False
        size = len(columns[0])
        if not all(type(c) is list and len(c) == size for c in columns):
            return False
    except (ValueError, TypeError, EOFError):  # torn or foreign: parse the file instead
        return False
    del blob
    schema = CatalogSchema.from_packed
    catalog.descriptors.extend(
        [
            ToolDescriptor(name, description, schema(p, catalog, i), group, deferrable)
            for i, (name, description, group, deferrable, p) in enumerate(zip(*columns, strict=True))
        ]
    )
    return True


def store(catalog: CatalogFile, columns: Columns | None = None) -> None:
    """Keep ``catalog``'s read (``columns`` if the parse gathered them); nothing when a
    schema could not be packed (nested deeper than ``marshal`` goes), which every later
    read then parses again."""
    work["catalog parses"] += 1
    if columns is None:
        columns = ([], [], [], [], [])
        names, descriptions, groups, deferrables, packed = columns
        for d in catalog.descriptors:
            names.append(d.name)
            descriptions.append(d.description)
            groups.append(d.group)
            deferrables.append(d.deferrable)
            packed.append(getattr(d.parameters, "packed", None))
    if None in columns[4]:
        return
    default_digest_cache().put(NAMESPACE, catalog.digest, marshal.dumps(columns), binary=True)


__all__ = ["MIN_BYTES", "NAMESPACE", "load", "store", "worth_keeping"]
