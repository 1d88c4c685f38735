"""``memory://`` profile store: documents in a process-wide dict, for tests and demos.

``memory://name`` stores with the same name share their documents within one process
(so a test can read what a runtime saved); a bare ``memory://`` is private to its store.
Nothing survives the process.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from typing import Any

_SHARED: dict[str, dict[tuple[str, str], dict[str, Any]]] = {}
_SHARED_LOCK = threading.Lock()


class MemoryStore:
    """A ``ProfileStore`` held in memory; every operation takes one lock."""

    def __init__(self, name: str = "") -> None:
        self.url = f"memory://{name}"
        self._lock = threading.Lock()
        if name:
            with _SHARED_LOCK:
                self._docs = _SHARED.setdefault(name, {})
                # one lock per shared name, so stores of one name exclude each other
                self._lock = _NAME_LOCKS.setdefault(name, threading.Lock())
        else:
            self._docs = {}

    @classmethod
    def from_url(cls, url: str) -> MemoryStore:
        return cls(url.partition("://")[2].strip("/"))

    @staticmethod
    def forget(name: str) -> None:
        """Drop every document of a shared name (test isolation)."""
        with _SHARED_LOCK:
            _SHARED.pop(name, None)

    def read(self, agent_id: str, key: str) -> Mapping[str, Any] | None:
        with self._lock:
            doc = self._docs.get((agent_id, key))
            return copy.deepcopy(doc) if doc is not None else None

    def update(
        self, agent_id: str, key: str, change: Callable[[Mapping[str, Any] | None], Mapping[str, Any]]
    ) -> Mapping[str, Any]:
        with self._lock:
            current = self._docs.get((agent_id, key))
            new = dict(change(copy.deepcopy(current) if current is not None else None))
            self._docs[(agent_id, key)] = copy.deepcopy(new)
            return new

    def delete(self, agent_id: str, key: str) -> bool:
        with self._lock:
            return self._docs.pop((agent_id, key), None) is not None

    def agents(self, key: str) -> list[str]:
        with self._lock:
            return sorted(a for a, k in self._docs if k == key)

    def close(self) -> None:
        pass


_NAME_LOCKS: dict[str, threading.Lock] = {}
