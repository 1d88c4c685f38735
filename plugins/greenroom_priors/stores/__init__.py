"""The built-in profile stores and how a store URL becomes a store.

``sqlite:///path`` (the default, one file), ``postgresql://...`` (a fleet of agent
processes sharing profiles) and ``memory://name`` (tests). Other schemes come from any
plugin's ``greenroom_profile_stores`` hook; this package only resolves URLs through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from greenroom.storage import state_dir
from greenroom.stores import ProfileStore, StoreError, StoreFactory
from greenroom_priors.stores.memory import MemoryStore
from greenroom_priors.stores.postgres import PostgresStore
from greenroom_priors.stores.sqlite import SqliteStore

DEFAULT_FILE = "priors.sqlite3"


def default_url() -> str:
    """The default store: one SQLite file in greenroom's state directory."""
    return "sqlite://" + (state_dir() / DEFAULT_FILE).resolve().as_posix()


def builtin_factories() -> dict[str, StoreFactory]:
    return {
        "sqlite": SqliteStore.from_url,
        "postgresql": PostgresStore.from_url,
        "postgres": PostgresStore.from_url,
        "memory": MemoryStore.from_url,
    }


def merge_factories(answers: Iterable[Mapping[str, StoreFactory] | None]) -> dict[str, StoreFactory]:
    """Combine ``greenroom_profile_stores`` answers; the earlier answer in pluggy's call
    order wins, so a ``tryfirst`` store plugin can replace a built-in scheme."""
    out: dict[str, StoreFactory] = {}
    for answer in answers:
        for scheme, factory in (answer or {}).items():
            out.setdefault(scheme.lower(), factory)
    return out


def scheme_of(url: str) -> str:
    scheme, sep, _ = url.partition(":")
    if not sep or not scheme:
        raise StoreError(
            f"store URL {url!r} has no scheme; expected e.g. sqlite:///path/priors.sqlite3, "
            "postgresql://user@host/db or memory://"
        )
    return scheme.lower()


def absolutize(url: str, base_dir: str | Path | None) -> str:
    """Resolve a relative ``sqlite://`` path against ``base_dir`` (the config's folder)."""
    if scheme_of(url) != "sqlite" or base_dir is None:
        return url
    path = SqliteStore.path_of(url)
    if path is None or path.is_absolute():
        return url
    query = url.partition("?")[2]
    return "sqlite://" + (Path(base_dir) / path).resolve().as_posix() + (f"?{query}" if query else "")


def open_store(url: str | None, factories: Mapping[str, StoreFactory]) -> ProfileStore:
    """The store for ``url`` (None: the default SQLite file)."""
    url = url or default_url()
    scheme = scheme_of(url)
    factory = factories.get(scheme)
    if factory is None:
        known = ", ".join(sorted(factories)) or "none"
        raise StoreError(
            f"no profile store handles {scheme}:// URLs (available: {known}); install the plugin that provides it"
        )
    return factory(url)


def redact(url: str) -> str:
    """The URL with any password replaced, for messages and events."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)
    user = (parts.username or "") + ":***"
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc[-1]}"))


def describe(store: Any) -> str:
    return redact(str(getattr(store, "url", type(store).__name__)))


__all__ = [
    "MemoryStore",
    "PostgresStore",
    "SqliteStore",
    "StoreError",
    "absolutize",
    "builtin_factories",
    "default_url",
    "describe",
    "merge_factories",
    "open_store",
    "redact",
]
