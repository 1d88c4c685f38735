"""Store URLs: the default one, their scheme, and how they are shown.

Every store module needs these and the store registry needs the stores, so they live
apart from both.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit, urlunsplit

from greenroom import state_dir
from greenroom_priors.store import StoreError

DEFAULT_FILE = "priors.sqlite3"


def default_url() -> str:
    """The default store: one SQLite file in greenroom's state directory."""
    return "sqlite://" + (state_dir() / DEFAULT_FILE).resolve().as_posix()


def scheme_of(url: str) -> str:
    scheme, sep, _ = url.partition(":")
    if not sep or not scheme:
        raise StoreError(
            f"store URL {url!r} has no scheme; expected e.g. sqlite:///path/priors.sqlite3, "
            "postgresql://user@host/db or memory://"
        )
    return scheme.lower()


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
    """A store as messages name it: its URL without the password."""
    return redact(str(getattr(store, "url", type(store).__name__)))
