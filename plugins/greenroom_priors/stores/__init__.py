"""The built-in profile stores and how a store URL becomes a store.

``sqlite:///path`` (the default, one file), ``postgresql://...`` (a fleet of agent
processes sharing profiles) and ``memory://name`` (tests). Other schemes come from any
plugin's ``greenroom_profile_stores`` hook; this package only resolves URLs through it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from greenroom_priors.store import ProfileStore, StoreError, StoreFactory
from greenroom_priors.stores.memory import MemoryStore
from greenroom_priors.stores.postgres import PostgresStore
from greenroom_priors.stores.sqlite import SqliteStore
from greenroom_priors.stores.urls import default_url, describe, redact, scheme_of


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


def unknown_scheme(url: str, factories: Mapping[str, StoreFactory]) -> str | None:
    """Why ``url`` names a store no plugin provides, naming the schemes that exist
    (sorted); None when one provides it."""
    scheme = scheme_of(url)
    if scheme in factories:
        return None
    known = ", ".join(sorted(factories)) or "none"
    return (
        f"no installed and enabled plugin provides a {scheme!r} profile store (schemes: {known}); "
        "use one of these, or install and enable the plugin that provides it"
    )


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
    "unknown_scheme",
]
