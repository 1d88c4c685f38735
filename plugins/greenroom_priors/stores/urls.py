"""Store URLs: the default one, their scheme, and how they are shown.

Every store module needs these and the store registry needs the stores, so they live
apart from both.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from greenroom.kit import public_url, state_dir
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
    """``url`` as messages and events show it: without user info, query or fragment
    (where a password or a ``?password=`` sits), by core's ``greenroom.kit.public_url``. A
    URL without a host (``sqlite:///path``) keeps the ``//`` it was written with, which
    ``public_url`` would drop (``sqlite:/path``); it has no user info to hide. A URL
    that does not parse shows only its scheme."""
    try:
        parts = urlsplit(url)
        shown = public_url(url)
    except ValueError:
        return f"{url.partition(':')[0]}://(a URL that does not parse)"
    if not parts.netloc and url[len(parts.scheme) :].startswith("://"):
        return f"{parts.scheme}://{parts.path}"
    return shown


SECRET_PARAMETERS = ("pass", "secret", "token", "key", "auth")
"""Query parameters whose values a message must not quote (``password``, ``sslpassword``,
``api_key``...); other values (``sslmode=require``) are settings a reader needs."""


def hide_url_secrets(text: str, url: str) -> str:
    """``text`` (a database driver's message, which may quote the URL it was given)
    without the URL's password and secret query values; when the URL does not parse,
    only that the details are hidden."""
    try:
        parts = urlsplit(url)
        query = parse_qsl(parts.query)
        found = [parts.password or "", *(v for k, v in query if any(w in k.lower() for w in SECRET_PARAMETERS))]
    except ValueError:
        return "(details hidden: the store URL does not parse)"
    values = {form for value in found for form in (value, unquote(value)) if len(form) >= 4}
    for value in sorted(values, key=len, reverse=True):  # a secret containing another goes whole
        text = text.replace(value, "***")
    return text


def describe(store: Any) -> str:
    """A store as messages name it: its URL without the password."""
    return redact(str(getattr(store, "url", type(store).__name__)))
