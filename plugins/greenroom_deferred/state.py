"""Session state of the deferred-tools plugin, readable from a snapshot after a run."""

from __future__ import annotations

from typing import Any, Literal

import attrs

from greenroom_deferred.retention import BetaState

Mode = Literal["eager", "deferred"]


@attrs.frozen
class Placement:
    """A tool's current mode and why it has it (``rule '*_admin'``, ``policy never``,
    ``default``, ``promotion: search``, ``retention: idle 6 steps`` ...)."""

    mode: Mode
    reason: str

    def __deepcopy__(self, memo: dict[int, Any]) -> Placement:
        # immutable: a run's snapshot shares it instead of copying one per tool
        return self


@attrs.define
class DeferralState:
    """Per session: each tool's mode, what the model has discovered, the retention model.

    ``modes`` covers every visible tool. ``discovered`` lists tools whose schemas the
    model has received (search, load_tools, or a direct call), in order. ``active`` says
    whether deferral applies this session, ``activation`` why. ``expansion`` maps group
    ids to None (fully loaded) or the names loaded so far. ``step`` counts model calls
    over the whole session, so retention carries across runs. ``strategy`` is the
    strategy in effect for the last run (``native`` falls back to ``dispatch`` on a model
    without hosted tool search); ``native_order`` fixes the order of the tools the
    native strategy sends, so the tools array stays the same bytes for the session.
    """

    modes: dict[str, Placement] = attrs.field(factory=dict)
    discovered: list[str] = attrs.field(factory=list)
    retention: dict[str, BetaState] = attrs.field(factory=dict)
    expansion: dict[str, list[str] | None] = attrs.field(factory=dict)
    active: bool = False
    activation: str = ""
    savings_tokens: float = 0.0
    savings_chars4: float = 0.0
    listing: str | None = None
    step: int = 0
    placed: bool = False
    strategy: str = ""
    native_order: list[str] = attrs.field(factory=list)

    def eager(self) -> list[str]:
        return [n for n, p in self.modes.items() if p.mode == "eager"]

    def deferred(self) -> list[str]:
        return [n for n, p in self.modes.items() if p.mode == "deferred"]
