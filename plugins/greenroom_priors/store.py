"""The profile-store contract: per-agent documents with atomic read-modify-write.

Stores are selected by URL (``sqlite:///path``, ``postgresql://...``, ``memory://``) and
contributed through the ``greenroom_profile_stores`` hook this plugin declares
(``greenroom_priors.hookspecs``), so a third-party store is one pip install away: it
implements the hook and returns factories of objects with this shape.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable


class StoreError(RuntimeError):
    """A store that cannot be used: says which store and how to fix it."""


@runtime_checkable
class ProfileStore(Protocol):
    url: str

    def read(self, agent_id: str, key: str) -> Mapping[str, Any] | None:
        """The stored document, or None when the agent has none."""

    def update(
        self, agent_id: str, key: str, change: Callable[[Mapping[str, Any] | None], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        """Apply ``change`` to the current document atomically (no lost updates) and
        return what was written.

        ``change`` may be called more than once (a store retries when another writer got
        there first), so it must be pure: its result depends only on its argument."""

    def delete(self, agent_id: str, key: str) -> bool: ...

    def agents(self, key: str) -> list[str]: ...

    def close(self) -> None: ...


StoreFactory = Callable[[str], ProfileStore]
"""Opens the store a URL names: ``factory("redis://host/0")``."""
