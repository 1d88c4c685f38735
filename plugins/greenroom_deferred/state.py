"""Session state of the deferred-tools plugin, readable from a snapshot after a run.

A tool's placement is data: its mode, where that mode came from (``PlacementSource``)
and the reason in words for people. Code decides on the source, never on the words.
"""

from __future__ import annotations

import copy
import enum
from typing import Any, Literal

import attrs

from greenroom_deferred.placing.retention import BetaState

Mode = Literal["eager", "deferred"]


class PlacementSource(enum.Enum):
    """Where a tool's mode came from. The values are what a saved session and
    ``greenroom inspect --json`` carry."""

    NEVER_DEFER = "never_defer"  # the config's never_defer list
    POLICY_NEVER = "policy_never"  # the tool owner's deferrable = "never"
    POLICY_ALWAYS = "policy_always"  # the tool owner's deferrable = "always"
    GROUP = "group"  # a tool of a deferred group
    RULE = "rule"  # the first matching placement rule
    HINT = "hint"  # its source asks that it start eager (ToolDescriptor.eager_hint)
    DEFAULT = "default"  # the config's default_mode
    INACTIVE = "inactive"  # deferral is off this session, so the tool is sent as is
    PRIOR = "prior"  # learned priors say the tool is used often enough to start eager
    PROMOTION = "promotion"  # found this session (inject strategy)
    RETENTION = "retention"  # promoted, then idle long enough to be deferred again

    @property
    def retainable(self) -> bool:
        """Whether the retention model may undo this placement: only placements that came
        from use (a promotion or learned priors), never the config's or the owner's word."""
        return self in (PlacementSource.PROMOTION, PlacementSource.PRIOR)

    @property
    def keeps_deferred(self) -> bool:
        """Whether this deferral stands when the thresholds switch deferral off: the
        owner's ``always`` and the tools of deferred groups."""
        return self in (PlacementSource.POLICY_ALWAYS, PlacementSource.GROUP)

    @property
    def yields_to_priors(self) -> bool:
        """Whether learned priors may start this deferred tool eager: a tool deferred by
        default or as a tool of a deferred group (an MCP server's, say), never against a
        rule or the owner's ``always``."""
        return self in (PlacementSource.DEFAULT, PlacementSource.GROUP)


@attrs.frozen
class Placement:
    """A tool's current mode, where it came from, and why in words.

    ``detail`` is for people (``rule 'github_*'``, ``policy never``, ``promotion: search
    'x'``, ``retention: idle 6 steps, upper90 0.0123``); decisions read ``source``.
    """

    mode: Mode
    source: PlacementSource
    detail: str = ""

    @property
    def reason(self) -> str:
        """The former name of ``detail``, kept for code that reads it."""
        return self.detail

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
    revision: int = 0
    """Bumped whenever ``modes`` changes, so what is derived from it can be kept."""
    _known: tuple[list[str], set[str]] | None = attrs.field(default=None, init=False, eq=False, repr=False)
    """``discovered`` as a set, with the list it was made from: membership is asked on
    every call and every promotion, and the list grows with the session (not saved)."""

    def has_discovered(self, name: str) -> bool:
        """Whether ``name`` is in ``discovered`` (a set lookup, however long the session)."""
        return name in self._discovered_set()

    def discover(self, name: str) -> bool:
        """Add ``name`` to ``discovered`` unless it is there; whether it was added."""
        known = self._discovered_set()
        if name in known:
            return False
        self.discovered.append(name)
        known.add(name)
        return True

    def _discovered_set(self) -> set[str]:
        cached = self._known
        # made again when the list was replaced or changed around these methods
        if cached is None or cached[0] is not self.discovered or len(cached[1]) != len(self.discovered):
            cached = self._known = (self.discovered, set(self.discovered))
        return cached[1]

    def __deepcopy__(self, memo: dict[int, Any]) -> DeferralState:
        # a snapshot is taken at the end of every run: a generic deep copy of 100,000
        # placements keeps a memo entry per object. Placements and names are immutable,
        # so the containers are copied, and only the mutable values in them.
        return attrs.evolve(
            self,
            modes=dict(self.modes),
            discovered=list(self.discovered),
            retention={n: copy.copy(b) for n, b in self.retention.items()},
            expansion={g: None if names is None else list(names) for g, names in self.expansion.items()},
            native_order=list(self.native_order),
        )

    def place(self, name: str, placement: Placement) -> None:
        """Set one tool's placement."""
        self.modes[name] = placement
        self.revision += 1

    def eager(self) -> list[str]:
        return [n for n, p in self.modes.items() if p.mode == "eager"]

    def deferred(self) -> list[str]:
        return [n for n, p in self.modes.items() if p.mode == "deferred"]

    def is_deferred(self, name: str) -> bool:
        placement = self.modes.get(name)
        return placement is not None and placement.mode == "deferred"


def forget_hidden(st: DeferralState, hidden: frozenset[str]) -> None:
    """Drop tools the run may not use from a session's placements, discoveries and
    retention, and unfreeze its listing so it is rendered again without them."""
    st.modes = {n: p for n, p in st.modes.items() if n not in hidden}
    st.revision += 1
    st.discovered = [n for n in st.discovered if n not in hidden]
    st.retention = {n: b for n, b in st.retention.items() if n not in hidden}
    st.native_order = [n for n in st.native_order if n not in hidden]
    st.expansion = {
        g: None if names is None else [n for n in names if n not in hidden] for g, names in st.expansion.items()
    }
    st.listing = None


# What sessions saved before placements were data said in words: the leading words of
# the old ``reason`` name the source. Read once, when such a file is resumed.
_OLD_REASONS: tuple[tuple[str, PlacementSource], ...] = (
    ("never_defer", PlacementSource.NEVER_DEFER),
    ("policy never", PlacementSource.POLICY_NEVER),
    ("policy always", PlacementSource.POLICY_ALWAYS),
    ("group", PlacementSource.GROUP),
    ("rule", PlacementSource.RULE),
    ("default", PlacementSource.DEFAULT),
    ("inactive", PlacementSource.INACTIVE),
    ("prior", PlacementSource.PRIOR),
    ("promotion", PlacementSource.PROMOTION),
    ("retention", PlacementSource.RETENTION),
)


def upgrade_saved_state(raw: Any) -> Any:
    """A ``DeferralState`` as an older version saved it (``{"mode", "reason"}`` per tool)
    in today's shape; today's shape passes through unchanged."""
    if not isinstance(raw, dict) or not isinstance(raw.get("modes"), dict):
        return raw
    modes = {}
    for name, placement in raw["modes"].items():
        if isinstance(placement, dict) and "source" not in placement and "reason" in placement:
            reason = str(placement["reason"])
            source = next((src for words, src in _OLD_REASONS if reason.startswith(words)), PlacementSource.DEFAULT)
            placement = {"mode": placement.get("mode"), "source": source.value, "detail": reason}
        modes[name] = placement
    return {**raw, "modes": modes}
