"""Keeping secrets out of what greenroom prints: URLs shown in errors, logs and traces, and
known secret values (a provider's API key, an MCP server's env and header values) in text
greenroom quotes but did not write (an error body, an SDK message, a server's stderr).

A ``Redactor`` hides the secrets of one source (a server's env and header values, a model
client's key) in that source's text. Values that are secrets wherever they appear (an API
key) are also remembered process-wide with ``remember_secrets``, so text that reaches the
user by another road (an error the CLI prints) is cleaned by ``redact_known``. An env value
is not remembered so: it may be an ordinary word or path that other messages quote.

``Secrets`` is the set a run masks its tool results and errors with: it remembers each value
with the forms a server echoes it in (base64, as inside a Basic ``Authorization`` header, and
URL-encoded) and masks them all in one pass of one compiled pattern.
"""

from __future__ import annotations

import base64
import re
import threading
import urllib.parse
from collections.abc import Callable, Iterable
from typing import Any

MASK = "***"
# Very short values ("1", "on") are not secrets and would garble every message.
_MIN_SECRET = 4
# A process uses a handful of keys; the bound only stops a runaway caller.
_MAX_KNOWN = 1024


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
    user, password = parts.username, parts.password
    found = [p for p in (user, password) if p]
    found += [urllib.parse.unquote(p) for p in found]  # as the server reads them
    found += [v for _, v in urllib.parse.parse_qsl(parts.query) if v]
    return list(dict.fromkeys(found))


def url_credentials(url: str) -> tuple[str, str] | None:
    """The ``(user, password)`` of ``url``'s user info, decoded (the password empty when
    there is none), if it has a user: what an HTTP client sends as a Basic header, the two
    joined by a colon and base64-encoded (``Secrets.add_pair`` hides that)."""
    parts = urllib.parse.urlsplit(url)
    if not parts.username:
        return None
    return urllib.parse.unquote(parts.username), urllib.parse.unquote(parts.password or "")


def add_url(secrets: Secrets, url: str) -> None:
    """Remember in ``secrets`` what ``url`` carries that is secret: its user info and
    query values (``url_secrets``), and the user info as a Basic header carries it."""
    secrets.add_all(url_secrets(url))
    pair = url_credentials(url)
    if pair is not None:
        secrets.add_pair(*pair)


def remember_url(url: str) -> None:
    """``remember_secrets`` for the credentials of ``url``'s user info, as themselves and
    as the Basic header an HTTP client makes of them (a ``base_url``'s, which text that
    reaches the user by any road may quote). The user name beside a password and the
    query values are its source's secrets only (``add_url``): an ``agent`` user or an
    ``api-version=2024-06-01`` is nobody's secret in other text."""
    credentials = url_credentials(url)
    if credentials is None or len(_known) >= _MAX_KNOWN:
        return
    user, password = credentials
    _known.add(password or user)
    _known.add_pair(user, password)


def add_header(secrets: Secrets, value: str) -> None:
    """Remember a header's value and its credentials alone: servers quote ``<token>``
    without ``Bearer``, and a Basic header's ``user:password`` decoded (``add_pair``)."""
    secrets.add(value)
    for part in value.split()[1:]:
        secrets.add(part)
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() == "basic" and credentials.strip():
        try:
            decoded = base64.b64decode(credentials.strip(), validate=True).decode("utf-8")
        except (ValueError, UnicodeDecodeError):
            return
        user, sep, password = decoded.partition(":")
        if sep:
            secrets.add_pair(user, password)


def remember_secrets(values: Iterable[str]) -> None:
    """Hide ``values`` in every text ``redact_known`` (and every ``Redactor``) cleans from
    now on: for values that are secret wherever they appear, such as an API key."""
    for value in values:
        if len(_known) >= _MAX_KNOWN:
            break
        _known.add(value)


def redact_known(text: str) -> str:
    """``text`` with every secret this process has been told about replaced by ``***``
    (in every form ``Secrets`` knows: as is, base64, URL-encoded)."""
    return _known.mask(text)


class Redactor:
    """Removes the secret values of one source from text greenroom quotes but did not
    write (a server's error message, its stderr, a provider's error body), along with
    every secret the process remembers (``remember_secrets``); in every form ``Secrets``
    knows."""

    def __init__(self, secrets: Iterable[str] | Secrets) -> None:
        self.secrets = secrets if isinstance(secrets, Secrets) else Secrets(secrets)

    def __call__(self, text: str) -> str:
        return _known.mask(self.secrets.mask(text))


# A base64 run shorter than this, cut out of a longer encoding, could be anybody's text.
_MIN_B64_CORE = 8
_URLSAFE = str.maketrans("+/", "-_")


def _b64_cores(raw: bytes) -> set[str]:
    """The base64 characters that encode ``raw`` wherever it sits in longer encoded bytes:
    one run per alignment (0, 1 or 2 bytes before it), without the characters that also
    carry bits of the neighbours. ``user:token`` inside a Basic header, encoded along with
    text around it, still shows one of these runs."""
    cores: set[str] = set()
    for lead in range(3):
        encoded = base64.b64encode(bytes(lead) + raw).decode("ascii").rstrip("=")
        first = -(-8 * lead // 6)  # the first character made of the value's bits only
        last = 8 * (lead + len(raw)) // 6  # characters before this one are whole
        core = encoded[first:last]
        if len(core) >= _MIN_B64_CORE:
            cores.add(core)
    return cores


def secret_forms(value: str) -> set[str]:
    """``value`` and the forms a server may echo it in: its base64 (standard and URL-safe,
    whole with padding and as the runs that encode it inside longer base64, such as a
    Basic header's ``user:password``) and its URL-encoded forms."""
    forms = {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value, safe="")}
    return {f for f in forms | _b64_forms(value) if len(f) >= _MIN_SECRET}


def _b64_forms(value: str) -> set[str]:
    raw = value.encode("utf-8")
    b64 = {base64.b64encode(raw).decode("ascii"), *_b64_cores(raw)}
    return b64 | {f.translate(_URLSAFE) for f in b64}


def _trie_source(forms: Iterable[str]) -> str:
    # A trie as one pattern: at each character the engine follows one branch, so a
    # megabyte is scanned once instead of once per form. A branch is tried before the
    # form that ends there, so the longest form at a position wins.
    root: dict[str, dict] = {}
    for form in forms:
        node = root
        for ch in form:
            node = node.setdefault(ch, {})
        node[""] = {}

    def source(node: dict[str, dict]) -> str:
        branches = []
        for ch, child in sorted(node.items()):
            if not ch:
                continue
            run = [ch]
            while len(child) == 1 and "" not in child:  # a chain without branches or ends
                ((ch, child),) = child.items()
                run.append(ch)
            branches.append(re.escape("".join(run)) + source(child))
        if not branches:
            return ""
        body = branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"
        return f"(?:{body})?" if "" in node else body

    return source(root)


def _compile(forms: set[str]) -> re.Pattern[str]:
    try:
        return re.compile(_trie_source(forms))
    except (RecursionError, re.error):  # pragma: no cover - thousands of nested prefixes
        return re.compile("|".join(map(re.escape, sorted(forms, key=lambda f: (-len(f), f)))))


class Secrets:
    """The secret values one run (or one source) must never show, in every form a server
    echoes them in. ``mask`` replaces each remembered form with ``***`` (longest first, so a
    secret containing another goes whole) through one compiled pattern, rebuilt only when
    the set changes; it is safe to share between threads."""

    def __init__(self, values: Iterable[str] = ()) -> None:
        self._values: set[str] = set()
        self._pairs: set[tuple[str, str]] = set()
        self._forms: set[str] = set()
        self._pattern: re.Pattern[str] | None = None
        self._lock = threading.Lock()
        for value in values:
            self.add(value)

    def add(self, value: str) -> None:
        """Remember ``value`` (ignored when shorter than 4 characters) with its base64 and
        URL-encoded forms. A ``user:password`` pair is remembered as the pair (so its base64,
        as in a Basic header, is masked) and its password alone."""
        if not isinstance(value, str) or len(value) < _MIN_SECRET:
            return
        fresh = {value}
        user, sep, password = value.partition(":")
        if sep and user and len(password) >= _MIN_SECRET and "/" not in value:
            fresh.add(password)
        with self._lock:
            fresh -= self._values
            if not fresh:
                return
            self._values |= fresh
            for one in fresh:
                self._forms |= secret_forms(one)
            self._pattern = None

    def add_pair(self, user: str, password: str) -> None:
        """Remember a ``user:password`` pair (a URL's user info, a Basic header's decoded
        credentials): the password with its forms, and the pair only as base64, the way a
        Basic header carries it (a user without a password too: ``user:``). The user name
        alone stays readable, as ``public_url`` and ``user:***`` in a message show which
        account was refused."""
        self.add(password)
        if not user:
            return
        with self._lock:
            if (user, password) in self._pairs:
                return
            self._pairs.add((user, password))
            self._forms |= {f for f in _b64_forms(f"{user}:{password}") if len(f) >= _MIN_SECRET}
            self._pattern = None

    def add_all(self, values: Iterable[str]) -> None:
        """``add`` each of ``values``."""
        for value in values:
            self.add(value)

    def merge(self, other: Secrets) -> None:
        """Remember every secret ``other`` knows too."""
        if other is self:
            return
        with other._lock:
            values, pairs = set(other._values), set(other._pairs)
        self.add_all(values)
        for user, password in pairs:
            self.add_pair(user, password)

    def values(self) -> frozenset[str]:
        """The secrets as added (without their encoded forms)."""
        with self._lock:
            return frozenset(self._values)

    def _compiled(self) -> re.Pattern[str] | None:
        with self._lock:
            if self._pattern is None and self._forms:
                self._pattern = _compile(self._forms)
            return self._pattern

    def mask(self, text: str) -> str:
        """``text`` with every remembered form of every secret replaced by ``***``."""
        pattern = self._compiled()
        if pattern is None or not text:
            return text
        # a replacement may join its neighbours into another form ("ab" + "***" + "cd"
        # when a secret holds "***"); each pass shortens the text, so this ends
        for _ in range(8):
            text, count = pattern.subn(MASK, text)
            if not count or pattern.search(text) is None:
                break
        return text

    def __call__(self, text: str) -> str:
        return self.mask(text)

    def __bool__(self) -> bool:
        with self._lock:
            return bool(self._values or self._pairs)

    def __len__(self) -> int:
        with self._lock:
            return len(self._values) + len(self._pairs)

    def __repr__(self) -> str:  # never the values themselves
        return f"Secrets({len(self)} known)"


def mask_json(value: Any, mask: Callable[[str], str]) -> Any:
    """``value`` (JSON-like) with ``mask`` applied to every string in it, keys included;
    the same object when nothing changed."""
    if isinstance(value, str):
        masked = mask(value)
        return value if masked == value else masked
    if isinstance(value, dict):
        items = [(mask_json(k, mask), mask_json(v, mask)) for k, v in value.items()]
        if all(k is k0 and v is v0 for (k, v), (k0, v0) in zip(items, value.items(), strict=True)):
            return value
        return dict(items)
    if isinstance(value, (list, tuple)):
        masked_items = [mask_json(v, mask) for v in value]
        if all(m is v for m, v in zip(masked_items, value, strict=True)):
            return value
        return type(value)(masked_items)
    return value


_known = Secrets()  # secret wherever they appear: API keys (``remember_secrets``)

__all__ = [
    "MASK",
    "Redactor",
    "Secrets",
    "add_header",
    "add_url",
    "mask_json",
    "public_url",
    "redact_known",
    "remember_secrets",
    "remember_url",
    "secret_forms",
    "url_credentials",
    "url_secrets",
]
