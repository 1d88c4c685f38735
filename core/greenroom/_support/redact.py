"""Keeping secrets out of what greenroom prints: URLs shown in errors, logs and traces, and
known secret values (a provider's API key, an MCP server's env and header values) in text
greenroom quotes but did not write (an error body, an SDK message, a server's stderr).

A ``Redactor`` hides the secrets of one source (a server's env and header values, a model
client's key) in that source's text. Values that are secrets wherever they appear (an API
key) are also remembered process-wide with ``remember_secrets``, so text that reaches the
user by another road (an error the CLI prints) is cleaned by ``redact_known``. An env value
is not remembered so: it may be an ordinary word or path that other messages quote.
"""

from __future__ import annotations

import threading
import urllib.parse
from collections.abc import Iterable

MASK = "***"
# Very short values ("1", "on") are not secrets and would garble every message.
_MIN_SECRET = 4
# A process uses a handful of keys; the bound only stops a runaway caller.
_MAX_KNOWN = 1024

_known: set[str] = set()
_known_lock = threading.Lock()


def public_url(url: str) -> str:
    """``url`` without user info (a proxy's password), query (an ``api-key``) or fragment;
    the host keeps its port, and an IPv6 host its brackets."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def url_secrets(url: str) -> list[str]:
    """The parts of ``url`` that may be credentials: user info and query values (a hosted
    server's ``?token=``). ``public_url`` leaves them out of what greenroom prints; these
    are for hiding them in what a server prints back."""
    parts = urllib.parse.urlsplit(url)
    found = [p for p in (parts.username, parts.password) if p]
    found += [v for _, v in urllib.parse.parse_qsl(parts.query) if v]
    return found


def _mask(text: str, values: list[str]) -> str:
    # Until nothing is left: masking one value can join its neighbours into another
    # ("x" + "***" + "y"). Each replacement shortens the text (a secret is longer than the
    # mask), so this ends.
    found = True
    while found:
        found = False
        for value in values:
            if value in text:
                text = text.replace(value, MASK)
                found = True
    return text


def _longest_first(values: Iterable[str]) -> list[str]:
    # a secret containing another is removed whole
    return sorted(set(values), key=len, reverse=True)


def _known_values() -> set[str]:
    with _known_lock:
        return set(_known)


def remember_secrets(values: Iterable[str]) -> None:
    """Hide ``values`` in every text ``redact_known`` (and every ``Redactor``) cleans from
    now on: for values that are secret wherever they appear, such as an API key."""
    fresh = [v for v in values if len(v) >= _MIN_SECRET]
    if not fresh:
        return
    with _known_lock:
        for value in fresh:
            if len(_known) >= _MAX_KNOWN:
                break
            _known.add(value)


def redact_known(text: str) -> str:
    """``text`` with every secret this process has been told about replaced by ``***``."""
    return _mask(text, _longest_first(_known_values()))


class Redactor:
    """Removes the secret values of one source from text greenroom quotes but did not
    write (a server's error message, its stderr, a provider's error body), along with
    every secret the process remembers (``remember_secrets``)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        self._values = {s for s in secrets if len(s) >= _MIN_SECRET}

    def __call__(self, text: str) -> str:
        return _mask(text, _longest_first(self._values | _known_values()))


__all__ = ["MASK", "Redactor", "public_url", "redact_known", "remember_secrets", "url_secrets"]
