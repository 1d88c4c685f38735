"""Views by who is calling: tools that need a scope (``[serve.oauth.scopes]``).

A rule ``"tools:admin" = ["admin_*", "group:ops", "mcp:vault"]`` hides from a caller
whose token lacks ``tools:admin`` the tools named ``admin_*``, the tools of group
``ops`` and the tools and skills of MCP server ``vault``. A caller's view
(``ScopeRules.filter_for``, a ``RunFilter``) is what its client's run is started with
(``Runtime.start_run(restrict=...)``): the run keeps those tools out wherever
``[tools.policy]`` applies, so the tools list, the listing, the search and its
``select:``, a group load and a call all leave them out, whatever a plugin does. The
caller of a request is the access token the SDK's bearer middleware checked
(``caller_of``); a request whose caller cannot be told is refused (fail closed)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from greenroom import HiddenBy, HideReason
from greenroom.kit import GlobError, check_glob, matches_any
from greenroom_gateway.clients import Caller

_GROUP = "group:"
_MCP = "mcp:"
_SKILLS = "skills:"


def check_pattern(pattern: str) -> str | None:
    """What is wrong with a rule's pattern, or None."""
    if not isinstance(pattern, str) or not pattern.strip():
        return "a pattern is a tool glob, 'group:NAME' or 'mcp:SERVER', not empty"
    for prefix in (_GROUP, _MCP):
        if pattern.startswith(prefix):
            return None if pattern[len(prefix) :].strip() else f"{pattern!r} names no {prefix[:-1]}"
    try:
        check_glob(pattern)
    except GlobError as exc:
        return str(exc)
    return None


class CallerFilter:
    """What one caller may not see: the rules whose scope it lacks (a ``RunFilter``)."""

    def __init__(self, missing: Mapping[str, Sequence[str]]) -> None:
        self._globs: list[tuple[str, str]] = []  # (glob, scope)
        self._groups: dict[str, str] = {}  # group id -> scope
        for scope, patterns in missing.items():
            for p in patterns:
                if p.startswith(_GROUP):
                    self._groups.setdefault(p[len(_GROUP) :], scope)
                elif p.startswith(_MCP):  # an MCP server's groups: its tools', its skills'
                    self._groups.setdefault(p, scope)
                    self._groups.setdefault(_SKILLS + p[len(_MCP) :], scope)
                else:
                    self._globs.append((p, scope))

    def tool_hidden(self, name: str, group: str | None) -> HideReason | None:
        if group is not None and group in self._groups:
            return self._why(self._groups[group], f"group {group}")
        for glob, scope in self._globs:
            if matches_any((glob,), name) is not None:
                return self._why(scope, glob)
        return None

    def group_hidden(self, group: str) -> HideReason | None:
        scope = self._groups.get(group)
        return self._why(scope, f"group {group}") if scope is not None else None

    @staticmethod
    def _why(scope: str, rule: str) -> HideReason:
        return HideReason(HiddenBy.CALLER, f"{scope!r} ({rule})")


class ScopeRules:
    """``[serve.oauth.scopes]``: per scope, the patterns of the tools that need it."""

    def __init__(self, rules: Mapping[str, Sequence[str]]) -> None:
        self.rules = {scope: tuple(patterns) for scope, patterns in rules.items() if patterns}

    def filter_for(self, caller: Caller) -> CallerFilter | None:
        """What ``caller`` may not see; None when it holds every scope the rules name."""
        missing = {s: p for s, p in self.rules.items() if s not in caller.scopes}
        return CallerFilter(missing) if missing else None


INVALID_REQUEST = -32600


def refused(message: str) -> Exception:
    """A request whose caller cannot be told, or not the caller its connection began with."""
    from mcp.shared.exceptions import MCPError

    return MCPError(INVALID_REQUEST, message)


def caller_of() -> Caller:
    """The caller of the request being answered: the access token the SDK's bearer
    middleware checked (``get_access_token``, the SDK's public door to it)."""
    from mcp.server.auth.middleware.auth_context import get_access_token

    token = get_access_token()
    if token is None:
        raise refused("no authenticated caller for this request")
    issuer = (token.claims or {}).get("iss")
    return Caller(str(issuer) if issuer else None, token.subject, token.client_id, frozenset(token.scopes))


__all__ = ["CallerFilter", "ScopeRules", "caller_of", "check_pattern", "refused"]
