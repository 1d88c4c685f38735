"""A third-party profile store, the way a store author writes one: a plugin implementing
``greenroom_profile_stores`` for the ``fixed://`` scheme, importing only ``greenroom``.

Its store holds one agent's priors, fixed at import, so a test can read them back
through ``greenroom priors``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from greenroom import Plugin, hookimpl

DOCUMENT = {
    "format": "greenroom.priors/1",
    "sessions": 4,
    "updated": "2025-01-31T09:00:00Z",
    "tools": {"lookup_order": {"p": 0.75, "calls": 9, "last_used": "2025-01-31T09:00:00Z"}},
}


class FixedStore:
    def __init__(self, url: str) -> None:
        self.url = url
        self.docs: dict[tuple[str, str], Mapping[str, Any]] = {("fixed-agent", "tool_priors"): DOCUMENT}

    def read(self, agent_id: str, key: str) -> Mapping[str, Any] | None:
        return self.docs.get((agent_id, key))

    def update(
        self, agent_id: str, key: str, change: Callable[[Mapping[str, Any] | None], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        new = self.docs[(agent_id, key)] = change(self.docs.get((agent_id, key)))
        return new

    def delete(self, agent_id: str, key: str) -> bool:
        return self.docs.pop((agent_id, key), None) is not None

    def agents(self, key: str) -> list[str]:
        return sorted(a for a, k in self.docs if k == key)

    def close(self) -> None:
        pass


class FixedStorePlugin(Plugin):
    name = "fixed-store"

    @hookimpl
    def greenroom_profile_stores(self) -> dict[str, Callable[[str], FixedStore]]:
        return {"fixed": FixedStore}
