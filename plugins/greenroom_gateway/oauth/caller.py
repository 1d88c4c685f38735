"""Who a gateway client's run is for: the caller an OAuth token names, and its view.

``CallerGateway`` (``greenroom.serve.views``) sets ``current_caller`` around the making of
a client's run; ``ClientRun`` reads it: its scope is restricted to what the caller may see
and, with priors per principal, its agent is named after the caller.
"""

from __future__ import annotations

import contextvars

import attrs

from greenroom.run.scope import RunFilter


@attrs.frozen
class Caller:
    """Who sent a request: the token's principal (issuer, subject, client) and scopes."""

    issuer: str | None
    subject: str | None
    client_id: str
    scopes: frozenset[str]

    @property
    def name(self) -> str:
        """The principal as one name (priors per principal): the subject, else the client."""
        return self.subject or self.client_id or "anonymous"


NOBODY = Caller(None, None, "", frozenset())
"""A caller without any scope: what is offered to nobody in particular may show only that."""


@attrs.frozen
class CallerContext:
    """The caller a run is made for, what it may not see, and whether priors are its own."""

    caller: Caller
    hidden: RunFilter | None = None
    per_principal: bool = False


current_caller: contextvars.ContextVar[CallerContext | None] = contextvars.ContextVar(
    "greenroom_serve_caller", default=None
)


def caller_key() -> str | None:
    """A key for the caller whose request is being answered (principal and scopes: its
    view depends on both), or None outside an OAuth caller's request. A run kept for a
    caller across requests is kept under it, never shared with another caller."""
    made_for = current_caller.get()
    if made_for is None:
        return None
    c = made_for.caller
    return "principal:" + "\x1f".join([c.issuer or "", c.subject or "", c.client_id, " ".join(sorted(c.scopes))])


__all__ = ["NOBODY", "Caller", "CallerContext", "caller_key", "current_caller"]
