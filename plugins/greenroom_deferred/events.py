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


@attrs.frozen
class ListingRebuilt(Event):
    """The session's frozen listing and tools array were rebuilt because tools they
    showed are now hidden (the tool policy or a plugin): the prompt-cache prefix changes
    once, and security wins over keeping it."""

    kind: str = attrs.field(init=False, default="listing_rebuilt")
    step: int = 0
    hidden: tuple[str, ...] = ()
    """The first names now hidden (at most ``SHOWN``)."""
    count: int = 0
    """How many tools the session had placed that are now hidden."""

    SHOWN = 20

    def describe(self) -> str:
        more = f" and {self.count - len(self.hidden)} more" if self.count > len(self.hidden) else ""
        return f"  listing rebuilt: now hidden {', '.join(self.hidden)}{more}"

    @property
    def style(self) -> str:
        return "yellow"
