"""What a plugin says about being able to serve: one ``Readiness`` per thing it needs
(``greenroom_readiness``), read by a gateway's ``/readyz``."""

from __future__ import annotations

import attrs


@attrs.frozen
class Readiness:
    """One thing a plugin needs in order to serve, and whether it is there now."""

    name: str
    """What was checked, in the operator's terms (``priors store postgresql://db/agents``),
    never with a secret in it."""
    ready: bool
    detail: str = ""
    """Why not (or what was seen), in a sentence without secrets."""


__all__ = ["Readiness"]
