"""What a tool's schema costs, and what deferring it saves.

Two measures: ``chars4`` is the reference formula (c = max(len(compact parameters
JSON)/4, 10), c_bar = max(len(name)/4, 1)); ``tokens`` uses exact o200k counts of the
same strings. Savings per tool are max(c - c_bar, 0).
"""

from __future__ import annotations

import functools

import attrs

from greenroom import ToolDescriptor, count_tokens, parameters_json


@attrs.frozen
class ToolCost:
    c: float
    c_bar: float

    @property
    def savings(self) -> float:
        return max(self.c - self.c_bar, 0.0)


@functools.lru_cache(maxsize=65536)
def _tokens(text: str) -> int:
    return count_tokens(text)


# Descriptors are immutable but hold a dict, so they cannot key an lru_cache; serialising
# 10,000 schemas again at every session start cost more than placing them. Keyed by id,
# with the descriptor kept in the entry so an id is never reused while cached.
_CACHE_LIMIT = 100_000
_cache: dict[int, tuple[ToolDescriptor, ToolCost, ToolCost]] = {}


def _costs(tool: ToolDescriptor) -> tuple[ToolCost, ToolCost]:
    hit = _cache.get(id(tool))
    if hit is not None and hit[0] is tool:
        return hit[1], hit[2]
    params = parameters_json(tool.parameters)
    tokens = ToolCost(c=float(max(_tokens(params), 1)), c_bar=float(max(_tokens(tool.name), 1)))
    chars4 = ToolCost(c=max(len(params) / 4, 10.0), c_bar=max(len(tool.name) / 4, 1.0))
    if len(_cache) >= _CACHE_LIMIT:
        _cache.clear()
    _cache[id(tool)] = (tool, tokens, chars4)
    return tokens, chars4


def chars4_cost(tool: ToolDescriptor) -> ToolCost:
    return _costs(tool)[1]


def token_cost(tool: ToolDescriptor) -> ToolCost:
    return _costs(tool)[0]


def cost(tool: ToolDescriptor, measure: str) -> ToolCost:
    return chars4_cost(tool) if measure == "chars4" else token_cost(tool)
