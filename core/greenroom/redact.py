"""Keeping secrets out of what greenroom prints: URLs shown in errors, logs and traces."""

from __future__ import annotations

import urllib.parse


def public_url(url: str) -> str:
    """``url`` without user info (a proxy's password), query (an ``api-key``) or fragment;
    the host keeps its port, and an IPv6 host its brackets."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc.rpartition("@")[2]
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, "", ""))


__all__ = ["public_url"]
