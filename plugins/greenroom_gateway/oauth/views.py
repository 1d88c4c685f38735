"""Views by who is calling: tools that need a scope (``[serve.oauth.scopes]``).

A rule ``"tools:admin" = ["admin_*", "group:ops", "mcp:vault"]`` hides from a caller whose
token lacks ``tools:admin`` the tools named ``admin_*``, the tools of group ``ops`` and of
MCP server ``vault``. The hiding is the run's scope (``Scoping.restrict``), the same one
``[tools.policy]`` fills: so the tools list, the listing, the search and its ``select:``,
a group load and a call all leave those tools out, whatever a plugin does.
``CallerGateway`` gives every HTTP client's run the view of the token it came with; a
request whose caller cannot be told is refused (fail closed).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from greenroom._support.globs import GlobError, check_glob, matches_any
from greenroom.run.policy import HiddenBy, HideReason
from greenroom.serve.caller import NOBODY, Caller, CallerContext, current_caller
from greenroom.serve.gateway import Gateway

if TYPE_CHECKING:
    from mcp.server.context import ServerRequestContext

    from greenroom.run.runtime import Runtime
    from greenroom.serve.client import ClientRun

_GROUP = "group:"
_MCP = "mcp:"


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
                elif p.startswith(_MCP):
                    self._groups.setdefault(p, scope)  # an MCP server's group id is mcp:NAME
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
    from greenroom.mcp.sdk import MCPError

    return MCPError(INVALID_REQUEST, message)


def caller_of(ctx: ServerRequestContext[Any, Any]) -> Caller:
    """The caller of a request, from the access token the SDK's bearer middleware checked."""
    from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser

    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, Mapping) else None
    if not isinstance(user, AuthenticatedUser):
        raise refused("no authenticated caller for this request")
    token = user.access_token
    issuer = (token.claims or {}).get("iss")
    return Caller(str(issuer) if issuer else None, token.subject, token.client_id, frozenset(token.scopes))


class CallerGateway(Gateway):
    """A gateway whose every client's run sees what its caller's token allows."""

    def __init__(self, runtime: Runtime, rules: ScopeRules, *, per_principal: bool = False, **kw: Any) -> None:
        super().__init__(runtime, **kw)
        self.rules = rules
        self.per_principal = per_principal
        self.caller_dependent = True
        """Every listing is for a caller that showed a token (a cache of it is private)."""

    async def prepare(self) -> None:
        """The instructions every client is told are what a caller without scopes sees."""
        token = current_caller.set(CallerContext(NOBODY, self.rules.filter_for(NOBODY)))
        try:
            await super().prepare()
        finally:
            current_caller.reset(token)

    async def client(self, ctx: ServerRequestContext[Any, Any]) -> ClientRun:
        caller = caller_of(ctx)
        token = current_caller.set(CallerContext(caller, self.rules.filter_for(caller), self.per_principal))
        try:
            run = await super().client(ctx)
        finally:
            current_caller.reset(token)
        if run.caller != caller:  # a connection is one caller's, with the scopes its view was made for
            raise refused("this connection was opened with another token's principal or scopes: connect again")
        return run


__all__ = ["CallerFilter", "CallerGateway", "ScopeRules", "caller_of", "check_pattern", "refused"]
