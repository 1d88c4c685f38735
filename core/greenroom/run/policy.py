"""Which tools an agent may use: the config's policy (``[tools.policy]``), why a tool is
hidden, and the scope of one run.

The runtime applies the policy to every tool source (Python tools, catalogs, groups
before and after they load, MCP servers from their cached listing before they start),
then asks the ``greenroom_hidden_tools`` hook, and keeps the answer as the run's
``ToolScope``. Everything plugins see of tools goes through it (``RunContext.tools``,
``groups``, ``visible_descriptors``), and the runtime refuses calls to hidden tools
whatever a plugin does, so a hidden tool cannot leak through a plugin that forgot to
check.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

import attrs

from greenroom._support.globs import GlobError, check_glob, could_match_prefixed, matches_any, matches_every_prefixed


def _globs(instance: Any, attribute: Any, value: tuple[str, ...]) -> None:
    for i, pattern in enumerate(value):
        try:
            check_glob(pattern)
        except GlobError as exc:
            exc.config_path = f".{attribute.name}[{i}]"  # type: ignore[attr-defined]
            raise


@attrs.frozen
class ToolPolicy:
    """Which tools the agent may use, by glob on the names the model sees.

    Args:
        allow: Globs of the tools the agent may use; empty: every tool. The tools
            plugins add (the search tool ...) need no allow rule: plugins are turned
            on and off in ``[plugins]``.
        deny: Globs of tools the agent may never use, plugin tools included; deny wins
            over allow.
    """

    allow: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_globs)
    deny: tuple[str, ...] = attrs.field(default=(), converter=tuple, validator=_globs)

    @property
    def empty(self) -> bool:
        return not self.allow and not self.deny

    def reason(self, name: str, *, plugin_tool: bool = False) -> HideReason | None:
        """Why the policy hides ``name``, or None when it may be used."""
        denied = matches_any(self.deny, name)
        if denied is not None:
            return HideReason(HiddenBy.DENY, denied)
        if self.allow and not plugin_tool and matches_any(self.allow, name) is None:
            return HideReason(HiddenBy.NOT_ALLOWED, ", ".join(self.allow))
        return None

    def hides_every_name_with(self, prefix: str) -> HideReason | None:
        """Why every tool named ``prefix...`` is hidden (an MCP server with prefixed
        names, before it is listed), or None when some such name may be allowed."""
        for pattern in self.deny:
            if matches_every_prefixed(pattern, prefix):
                return HideReason(HiddenBy.DENY, pattern)
        if self.allow and not any(could_match_prefixed(p, prefix) for p in self.allow):
            return HideReason(HiddenBy.NOT_ALLOWED, ", ".join(self.allow))
        return None


class HiddenBy(enum.Enum):
    """What hid a tool."""

    DENY = "deny"
    """A ``[tools.policy] deny`` glob matched it."""
    NOT_ALLOWED = "allow"
    """``[tools.policy] allow`` is set and no glob of it matched."""
    PLUGIN = "plugin"
    """A plugin named it from ``greenroom_hidden_tools``."""
    UNJUDGED = "unjudged"
    """A group's load brought it, and ``greenroom_hidden_tools`` failed to judge it (fail
    closed: the rule names the group)."""
    CALLER = "caller"
    """The run's caller lacks the scope a rule requires (an MCP client's OAuth token,
    ``[serve.oauth.scopes]``); the rule names the scope and the pattern."""


@attrs.frozen
class HideReason:
    """Why one tool is hidden: what hid it and the rule (a glob, the allow list, or the
    plugin's name)."""

    by: HiddenBy
    rule: str

    def describe(self) -> str:
        if self.by is HiddenBy.DENY:
            return f"policy deny {self.rule!r}"
        if self.by is HiddenBy.NOT_ALLOWED:
            return f"policy allow has no match ({self.rule})"
        if self.by is HiddenBy.CALLER:
            return f"the caller lacks scope {self.rule}"
        if self.by is HiddenBy.UNJUDGED:
            return f"loaded with group {self.rule!r}, and a hidden-tools hook failed to judge it"
        return f"plugin {self.rule!r}"


class ToolScope:
    """The tools hidden in one run, with why; only ever grows within a run (a group that
    loads may bring tools its catalog did not name)."""

    def __init__(self, hidden: Mapping[str, HideReason] | None = None) -> None:
        self._reasons: dict[str, HideReason] = dict(hidden or {})
        self.names: frozenset[str] = frozenset(self._reasons)
        self._group_reasons: dict[str, HideReason] = {}
        self.groups: frozenset[str] = frozenset()
        """Groups hidden whole before their tools are known (an MCP server's prefix)."""

    def hide_group(self, group_id: str, why: HideReason) -> None:
        if group_id not in self._group_reasons:
            self._group_reasons[group_id] = why
            self.groups = frozenset(self._group_reasons)

    @property
    def group_reasons(self) -> Mapping[str, HideReason]:
        return MappingProxyType(self._group_reasons)

    def hide(self, reasons: Iterable[tuple[str, HideReason]]) -> bool:
        """Add hidden tools (a reason already known stays); whether anything was added."""
        added = False
        for name, why in reasons:
            if name not in self._reasons:
                self._reasons[name] = why
                added = True
        if added:
            self.names = frozenset(self._reasons)
        return added

    @property
    def reasons(self) -> Mapping[str, HideReason]:
        return MappingProxyType(self._reasons)

    def __contains__(self, name: object) -> bool:
        return name in self.names

    def __len__(self) -> int:
        return len(self._reasons)


__all__ = ["HiddenBy", "HideReason", "ToolPolicy", "ToolScope"]
