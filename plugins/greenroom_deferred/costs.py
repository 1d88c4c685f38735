"""What a tool's schema costs, and what deferring it saves.

Two measures: ``chars4`` is the reference formula (c = max(len(compact parameters
JSON)/4, 10), c_bar = max(len(name)/4, 1)); ``tokens`` uses exact o200k counts of the
same strings. Savings per tool are max(c - c_bar, 0).
"""

from __future__ import annotations

import functools

import attrs

from greenroom.tokens import count_tokens, parameters_json
from greenroom.tools import ToolDescriptor


@attrs.frozen
class ToolCost:
    c: float
    c_bar: float

    @property
    def savings(self) -> float:
        return max(self.c - self.c_bar, 0.0)


def chars4_cost(tool: ToolDescriptor) -> ToolCost:
    params = parameters_json(tool.parameters)
    return ToolCost(c=max(len(params) / 4, 10.0), c_bar=max(len(tool.name) / 4, 1.0))


@functools.lru_cache(maxsize=65536)
def _tokens(text: str) -> int:
    return count_tokens(text)


def token_cost(tool: ToolDescriptor) -> ToolCost:
    params = parameters_json(tool.parameters)
    return ToolCost(c=float(max(_tokens(params), 1)), c_bar=float(max(_tokens(tool.name), 1)))


def cost(tool: ToolDescriptor, measure: str) -> ToolCost:
    return chars4_cost(tool) if measure == "chars4" else token_cost(tool)
