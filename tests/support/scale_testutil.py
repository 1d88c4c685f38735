"""Catalogs of any size for the scale tests, built at run time from the real catalogs in
``../shared/datasets`` (names made unique per repetition, descriptions and schemas kept;
one group per dataset and repetition). Nothing generated is written anywhere."""

from __future__ import annotations

import functools
import json

import pytest

from greenroom import ToolDescriptor
from support.gr_testutil import DATASETS


@functools.lru_cache(maxsize=1)
def _originals() -> tuple[tuple[str, dict[str, object]], ...]:
    if not DATASETS.exists():
        pytest.skip("../shared/datasets not present")
    out = []
    for name in ("seal_tools", "metatool", "github_mcp"):
        for line in (DATASETS / name / "tools.jsonl").read_text(encoding="utf-8").splitlines():
            if line.strip():
                out.append((name, json.loads(line)))
    return tuple(out)


@functools.lru_cache(maxsize=4)
def scale_catalog(size: int) -> tuple[ToolDescriptor, ...]:
    """``size`` descriptors: the datasets' tools, repeated as often as needed."""
    base = _originals()
    out: list[ToolDescriptor] = []
    rep = 0
    while len(out) < size:
        for dataset, raw in base:
            if len(out) >= size:
                break
            params = raw.get("parameters") or {"type": "object", "properties": {}}
            out.append(
                ToolDescriptor(
                    name=f"{raw['name']}_r{rep}",
                    description=str(raw.get("description") or ""),
                    parameters=params,  # type: ignore[arg-type]
                    group=f"{dataset}_r{rep}",
                )
            )
        rep += 1
    return tuple(out)
