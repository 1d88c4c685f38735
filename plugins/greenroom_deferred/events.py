"""Events of the deferred-tools plugin: searches, promotions and re-deferrals.

They go to the trace and the live view like core's events (``to_json``, ``describe``).
"""

from __future__ import annotations

import attrs

from greenroom import Event


@attrs.frozen
class SearchPerformed(Event):
    """A ToolSearch call (or a provider's hosted search) and what it found."""

    kind: str = attrs.field(init=False, default="search")
    step: int = 0
    query: str = ""
    mode: str = ""
    results: tuple[tuple[str, float], ...] = ()
    missing: tuple[str, ...] = ()

    def describe(self) -> str:
        found = ", ".join(f"{n} ({s:.2f})" for n, s in self.results) or "nothing"
        return f"  search {self.query!r} -> {found}"


@attrs.frozen
class ToolPromoted(Event):
    """A deferred tool whose schema the model now has."""

    kind: str = attrs.field(init=False, default="promote")
    step: int = 0
    tool: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"  promote {self.tool} ({self.reason})"

    @property
    def style(self) -> str:
        return "magenta"


@attrs.frozen
class ToolDeferred(Event):
    """A promoted tool that went idle and was deferred again (inject)."""

    kind: str = attrs.field(init=False, default="defer")
    step: int = 0
    tool: str = ""
    reason: str = ""

    def describe(self) -> str:
        return f"  defer {self.tool} ({self.reason})"

    @property
    def style(self) -> str:
        return "magenta"
