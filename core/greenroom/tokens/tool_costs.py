"""Per-tool token costs of descriptors, counted once per catalog and kept on disk by the
catalog's digest, so a process that loads a known catalog of 100,000 tools tokenizes none
of it.

``tool_costs(descriptors, field)`` is the contract (see its docstring). Descriptors loaded
from a catalog file (``greenroom.tools.catalog``) are found in their catalog by position,
without serialising them; the whole catalog's column is counted at once when a call asks
for a good share of it (a placement pass over every tool), and only the tools asked for
when it asks for a few (the handful a request sends). Other descriptors (Python tools, MCP
servers) are counted one by one and remembered for the process; a large batch of them is
kept on disk too, under the digest of the texts counted.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from typing import Any, Literal, get_args

import attrs

from greenroom._support.digest_cache import DigestCache, default_digest_cache, work
from greenroom._support.memo import IdentityMemo
from greenroom.tokens.counting import ENCODING, count_tokens, parameters_json, tool_json
from greenroom.tools import ToolDescriptor
from greenroom.tools.catalog import CatalogFile, catalog_entry, peek_schema

CostField = Literal["definition_tokens", "parameters_tokens", "parameters_chars", "name_tokens", "description_tokens"]
"""What is measured of each descriptor:

- ``definition_tokens``: tokens of the definition as a tools array sends it,
  ``tool_json(d)`` (what ``tool_tokens`` counts and request accounting reports);
- ``parameters_tokens``: tokens of ``parameters_json(d.parameters)``, the schema alone;
- ``parameters_chars``: characters of that same text (for the chars/4 formula);
- ``name_tokens`` and ``description_tokens``: tokens of the name, of the description.
"""

COST_FIELDS: tuple[CostField, ...] = get_args(CostField)

VERSION = 1
"""Part of every namespace: bump it when a field's text or counting changes."""

BULK_SHARE = 8
"""A call that asks for at least 1/BULK_SHARE of a catalog's tools gets the whole
catalog's column (read from disk, or counted and stored); a smaller one counts only what
it asks for, unless the column is already on disk."""

LOOSE_BATCH = 256
"""Descriptors outside any catalog are kept on disk when a call asks for this many."""

_LOOSE_LIMIT = 200_000
_loose: IdentityMemo[int] = IdentityMemo(_LOOSE_LIMIT, weak=True)  # by descriptor, tagged with the field


def _text(d: ToolDescriptor, field: str) -> str:
    # a catalog's schema is read without being kept: a column of a whole catalog reads
    # every one
    if field == "definition_tokens":
        return tool_json(attrs.evolve(d, parameters=peek_schema(d.parameters)))
    if field in ("parameters_tokens", "parameters_chars"):
        return parameters_json(peek_schema(d.parameters))
    return d.name if field == "name_tokens" else d.description


def _measure(field: str) -> Callable[[str], int]:
    return len if field == "parameters_chars" else count_tokens


def namespace(field: CostField) -> str:
    """The digest cache's namespace of a field's column."""
    return f"tool-costs.{field}.{ENCODING}.v{VERSION}"


_NAMESPACES: dict[str, str] = {field: namespace(field) for field in COST_FIELDS}


def tool_costs(
    descriptors: Sequence[ToolDescriptor], field: CostField = "parameters_tokens", *, cache: DigestCache | None = None
) -> list[int]:
    """``field`` of each descriptor (see ``CostField``), in the order given; exact, the same
    numbers ``count_tokens`` gives for the same texts.

    Work is per distinct catalog, not per call: descriptors of a catalog file cost a
    lookup each once the catalog's column is known, in this process or on disk (under
    ``namespace(field)`` and the catalog's digest, in ``cache`` or the default digest
    cache). A column missing on disk is counted and stored when the call asks for at least
    1/``BULK_SHARE`` of its catalog; smaller calls count only their own tools. Safe to
    call on every step: repeated calls count nothing again.
    """
    if field not in COST_FIELDS:
        raise ValueError(f"unknown cost field {field!r}; one of {', '.join(COST_FIELDS)}")
    out = [0] * len(descriptors)
    loose: list[int] = []
    wanted: dict[int, tuple[CatalogFile, list[tuple[int, int]]]] = {}
    for pos, d in enumerate(descriptors):
        origin = catalog_entry(d)
        if origin is None:
            loose.append(pos)
        else:
            wanted.setdefault(id(origin[0]), (origin[0], []))[1].append((pos, origin[1]))
    store = cache or default_digest_cache()
    for catalog, items in wanted.values():
        _from_catalog(catalog, items, field, store, out)
    if loose:
        _loose_costs(descriptors, loose, field, store, out)
    return out


def tool_cost(descriptor: ToolDescriptor, field: CostField = "parameters_tokens") -> int:
    """``tool_costs`` of one descriptor: a lookup once its catalog's column is known (a
    loop over many tools is still cheaper as one ``tool_costs`` call)."""
    origin = catalog_entry(descriptor)
    if origin is not None:
        column = origin[0].derived.get(_NAMESPACES.get(field, ""))
        if column is not None:
            return int(column[origin[1]])
    return tool_costs([descriptor], field)[0]


def _from_catalog(
    catalog: CatalogFile, items: list[tuple[int, int]], field: CostField, store: DigestCache, out: list[int]
) -> None:
    ns = _NAMESPACES[field]
    column: list[int] | None = catalog.derived.get(ns)
    partial: dict[int, int] = catalog.derived.setdefault(ns + ":some", {})
    if column is None:
        size = len(catalog.descriptors)

        def decode(value: Any) -> list[int]:
            return _decode_column(value, size)

        # counted one by one, a share of the catalog is worth the whole column too
        if (len(items) + len(partial)) * BULK_SHARE >= size:
            column = store.get_or_build(ns, catalog.digest, lambda: _count_all(catalog, field, partial), decode=decode)
        elif ns + ":looked" not in catalog.derived:  # the disk is asked once, not on every step
            catalog.derived[ns + ":looked"] = True
            found = store.get(ns, catalog.digest)
            try:
                column = decode(found) if found is not None else None
            except (ValueError, TypeError, KeyError):
                column = None
        if column is not None:
            catalog.derived[ns] = column
            partial.clear()
    if column is not None:
        for pos, i in items:
            out[pos] = column[i]
        return
    measure = _measure(field)
    for pos, i in items:
        n = partial.get(i)
        if n is None:
            work["token counts"] += 1
            n = partial[i] = measure(_text(catalog.descriptors[i], field))
        out[pos] = n


def _count_all(catalog: CatalogFile, field: str, known: dict[int, int]) -> list[int]:
    measure = _measure(field)
    work["token counts"] += len(catalog.descriptors) - len(known)
    return [known[i] if i in known else measure(_text(d, field)) for i, d in enumerate(catalog.descriptors)]


def _decode_column(value: Any, size: int) -> list[int]:
    column = value if isinstance(value, list) else None
    if column is None or len(column) != size or not all(type(n) is int for n in column):
        raise ValueError("not a column of this catalog")
    return column


def _loose_costs(
    descriptors: Sequence[ToolDescriptor], positions: list[int], field: CostField, store: DigestCache, out: list[int]
) -> None:
    todo: list[int] = []
    for pos in positions:
        d = descriptors[pos]
        hit = _loose.lookup((d,), field)
        if hit is not None:
            out[pos] = hit[0]
        else:
            todo.append(pos)
    if not todo:
        return
    texts = [_text(descriptors[pos], field) for pos in todo]
    measure = _measure(field)
    if len(todo) >= LOOSE_BATCH:
        h = hashlib.blake2b(digest_size=20)
        for text in texts:
            h.update(text.encode("utf-8", "surrogatepass") + b"\x00")

        def count() -> list[int]:
            work["token counts"] += len(texts)
            return [measure(t) for t in texts]

        values = store.get_or_build(
            namespace(field), h.hexdigest(), count, decode=lambda v: _decode_column(v, len(texts))
        )
    else:
        work["token counts"] += len(texts)
        values = [measure(t) for t in texts]
    for pos, n in zip(todo, values, strict=True):
        d = descriptors[pos]
        _loose.put((d,), n, field)
        out[pos] = n


__all__ = ["COST_FIELDS", "CostField", "namespace", "tool_cost", "tool_costs"]
