"""What a tool's schema costs, and what deferring it saves.

Two measures: ``chars4`` is the reference formula (c = max(len(compact parameters
JSON)/4, 10), c_bar = max(len(name)/4, 1)); ``tokens`` uses exact o200k counts of the
same strings. Savings per tool are max(c - c_bar, 0).

The counts come from ``greenroom.tokens.tool_costs``, kept per catalog on disk: a session over a
known catalog of 100,000 tools tokenizes nothing to place them.
"""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from greenroom import ToolDescriptor
from greenroom.kit import descriptor_cost as tool_cost
from greenroom.kit import descriptor_costs as tool_costs


@attrs.frozen
class ToolCost:
    c: float
    c_bar: float

    @property
    def savings(self) -> float:
        return max(self.c - self.c_bar, 0.0)


def _tokens(params: int, name: int) -> ToolCost:
    return ToolCost(c=float(max(params, 1)), c_bar=float(max(name, 1)))


def _chars4(params_chars: int, name: str) -> ToolCost:
    return ToolCost(c=max(params_chars / 4, 10.0), c_bar=max(len(name) / 4, 1.0))


def token_cost(tool: ToolDescriptor) -> ToolCost:
    return _tokens(tool_cost(tool, "parameters_tokens"), tool_cost(tool, "name_tokens"))


def chars4_cost(tool: ToolDescriptor) -> ToolCost:
    return _chars4(tool_cost(tool, "parameters_chars"), tool.name)


def cost(tool: ToolDescriptor, measure: str) -> ToolCost:
    return chars4_cost(tool) if measure == "chars4" else token_cost(tool)


def costs(tools: Sequence[ToolDescriptor], measure: str) -> list[ToolCost]:
    """``cost`` of many tools at once (one lookup per catalog, not one per tool)."""
    if measure == "chars4":
        return [_chars4(c, d.name) for c, d in zip(tool_costs(tools, "parameters_chars"), tools, strict=True)]
    params, names = tool_costs(tools, "parameters_tokens"), tool_costs(tools, "name_tokens")
    return [_tokens(p, n) for p, n in zip(params, names, strict=True)]
