"""Keeping secrets out of what greenroom prints: URLs shown in errors, logs and traces, and
known secret values (an MCP server's env and header values) in text greenroom quotes."""

from __future__ import annotations

import urllib.parse
from collections.abc import Iterable


def public_url(url: str) -> str:
    """``url`` without user info (a proxy's password), query (an ``api-key``) or fragment;
    the host keeps its port, and an IPv6 host its brackets."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


class Redactor:
    """Removes known secret values from text greenroom quotes but did not write (a
    server's error message, its stderr)."""

    def __init__(self, secrets: Iterable[str]) -> None:
        # Longest first, so a secret containing another is removed whole; very short values
        # ("1", "on") are not secrets and would garble every message.
        self._values = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)

    def __call__(self, text: str) -> str:
        for value in self._values:
            text = text.replace(value, "***")
        return text


__all__ = ["Redactor", "public_url"]
